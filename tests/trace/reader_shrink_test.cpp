// A trace file truncated while it is read (a profiler still writing it, a copy in progress):
// one UserError naming the file, never SIGBUS. And inputs that are no regular file: a FIFO
// without a writer and /dev/zero must not hang, a cut gzip member is one line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "trace/reader.h"
#include "trace/shrink_guard.h"
#include "trace/trace_test_util.h"
#include "util/error.h"

namespace ts::trace {
namespace {

// A valid modern-form trace of about `mb` MB (the reader reports progress every 16 MiB of a
// mapped file, which is where the tests truncate it).
std::string big_trace(size_t mb) {
  std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
  s.reserve(mb << 20 | 4096);
  char ev[256];
  for (int64_t i = 0; s.size() < (mb << 20); ++i) {
    int n = std::snprintf(ev, sizeof ev,
                          R"(%s{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, )"
                          R"("tid": 7, "ts": %lld.500, "dur": 3.250, "args": {"correlation": %lld, "stream": 7}})",
                          i ? ",\n  " : "\n  ", static_cast<long long>(1000 + 5 * i), static_cast<long long>(i));
    s.append(ev, static_cast<size_t>(n));
  }
  s += "\n]}\n";
  return s;
}

std::string write_big(const std::string& name, size_t mb) {
  std::string p = test::temp_dir() + "/" + name;
  test::write_file(p, big_trace(mb));
  return p;
}

uint64_t size_of(const std::string& p) {
  struct stat sb {};
  EXPECT_EQ(::stat(p.c_str(), &sb), 0);
  return static_cast<uint64_t>(sb.st_size);
}

// Reads `path`; at the first progress report (16 MiB in, the rest still unread), truncates the
// file to `cut` bytes through its own descriptor, as another process would. Returns the error.
std::string read_truncating(const std::string& path, uint64_t cut) {
  ReadOptions opt;
  bool done = false;
  opt.progress = [&](uint64_t, uint64_t, uint64_t) {
    if (done) return;
    done = true;
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(cut)), 0);
    ::close(fd);
  };
  try {
    read_trace(path, opt);
  } catch (const UserError& e) {
    EXPECT_TRUE(done) << "the progress callback never ran";
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

TEST(TraceShrink, TruncatedWhileScanningIsOneLine) {
  std::string p = write_big("shrink.json", 40);
  uint64_t was = size_of(p);
  // Past the parse position, at an odd offset (inside a page), and to nothing at all.
  for (uint64_t cut : {uint64_t(30) << 20, (uint64_t(20) << 20) + 1234, uint64_t(0)}) {
    test::write_file(p, big_trace(40));
    std::string e = read_truncating(p, cut);
    EXPECT_EQ(e, p + ": the file shrank while being read (was " + std::to_string(was) + " bytes, now " +
                     std::to_string(cut) + ")");
  }
}

TEST(TraceShrink, GzipTruncatedWhileInflatingIsOneLine) {
  // Gzip is read(), not mapped: a truncation shows as a cut member, reported as the shrink.
  std::string p = write_big("shrink_src.json", 40);
  int st = 0;
  test::run_command("gzip -1 -f " + p, st);
  ASSERT_EQ(st, 0);
  std::string gz = p + ".gz";
  uint64_t was = size_of(gz);
  uint64_t cut = was / 2;
  EXPECT_EQ(read_truncating(gz, cut), gz + ": the file shrank while being read (was " + std::to_string(was) +
                                          " bytes, now " + std::to_string(cut) + ")");
}

TEST(TraceShrink, SeveralThreadsEachGetTheirOwnError) {
  // Multi-trace analysis reads traces on worker threads: a fault on one thread must be
  // absorbed for that thread's file only, and an intact file read meanwhile is unaffected.
  std::vector<std::string> paths = {write_big("t0.json", 36), write_big("t1.json", 36), write_big("t2.json", 36)};
  uint64_t was = size_of(paths[0]);
  std::vector<std::string> errors(3);
  size_t intact_events = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] { errors[i] = read_truncating(paths[i], uint64_t(20 + i) << 20); });
  threads.emplace_back([&] { intact_events = read_trace(paths[2]).size(); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(errors[i], paths[i] + ": the file shrank while being read (was " + std::to_string(was) +
                             " bytes, now " + std::to_string(uint64_t(20 + i) << 20) + ")");
  // Events counted independently: one per "ph" key written by big_trace.
  std::string text = test::read_file(paths[2]);
  size_t expected = 0;
  for (size_t at = text.find("\"ph\""); at != std::string::npos; at = text.find("\"ph\"", at + 1)) ++expected;
  EXPECT_EQ(intact_events, expected);
}

TEST(TraceShrink, PreviousSigbusHandlerIsRestored) {
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &before), 0);
  std::string p = write_big("restore.json", 20);
  read_trace(p);
  EXPECT_NE(read_truncating(p, 17u << 20), "");
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &after), 0);
  EXPECT_EQ(reinterpret_cast<void*>(after.sa_handler), reinterpret_cast<void*>(before.sa_handler));
  EXPECT_EQ(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
}

// A SIGBUS that is not the reader's (outside any guard, or outside the guarded range) still
// kills the process: the guard only absorbs faults in its own mapping.
void touch_truncated_mapping(bool with_unrelated_guard) {
  std::string p = test::temp_dir() + "/unrelated.bin";
  test::write_file(p, std::string(1 << 16, 'x'));
  int fd = ::open(p.c_str(), O_RDWR);
  char* m = static_cast<char*>(::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0));
  if (::ftruncate(fd, 0) != 0) _exit(3);
  // This child dies without running destructors: its file and temp_dir() go now (the mapping
  // stays, and still faults); removing the directory fails harmlessly if it holds more.
  ::unlink(p.c_str());
  ::rmdir(test::temp_dir().c_str());
  void* other = ::mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::unique_ptr<ShrinkGuard> g;
  if (with_unrelated_guard) g = std::make_unique<ShrinkGuard>(static_cast<char*>(other), 1 << 16);
  volatile char c = m[100];
  (void)c;
  _exit(0);
}

TEST(TraceShrink, NestedGuardsOnOneThread) {
  // Two traces mapped at once on one thread: a fault in the outer one's mapping is absorbed
  // for it (reads zeros), while the inner guard is live, and marks only the outer guard.
  std::string p = test::temp_dir() + "/nested.bin";
  test::write_file(p, std::string(1 << 16, 'x'));
  int fd = ::open(p.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char* m = static_cast<char*>(::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE(m, MAP_FAILED);
  char* other = static_cast<char*>(::mmap(nullptr, 1 << 16, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  {
    ShrinkGuard outer(m, 1 << 16);
    ShrinkGuard inner(other, 1 << 16);
    EXPECT_EQ(m[100], 'x');
    ASSERT_EQ(::ftruncate(fd, 4096), 0);
    EXPECT_EQ(m[10000], 0);  // past the new end: a zero page, not SIGBUS
    EXPECT_EQ(m[100], 'x');  // before it: still the file
    EXPECT_TRUE(outer.faulted());
    EXPECT_FALSE(inner.faulted());
  }
  ::munmap(m, 1 << 16);
  ::munmap(other, 1 << 16);
  ::close(fd);
}

TEST(TraceShrinkDeathTest, ForeignFaultsStillKill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(touch_truncated_mapping(false), ::testing::KilledBySignal(SIGBUS), "");
  EXPECT_EXIT(touch_truncated_mapping(true), ::testing::KilledBySignal(SIGBUS), "");
}

using test::error_of;

TEST(TraceShrink, DevicesAreRefused) {
  // /dev/zero would otherwise be read forever.
  EXPECT_EQ(error_of("/dev/zero"), "/dev/zero: is a character device, expected a trace file (.json or .json.gz) or a pipe");
  EXPECT_EQ(error_of("/dev/null"), "/dev/null: is a character device, expected a trace file (.json or .json.gz) or a pipe");
}

TEST(TraceShrink, FifoWithoutWriterDoesNotHang) {
  std::string p = test::temp_dir() + "/nowriter.fifo";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  ReadOptions opt;
  opt.pipe_wait_ms = 300;
  EXPECT_EQ(error_of(p, opt), p + ": nothing was written to the pipe within 0.3 s (no writer?), expected a trace");
}

TEST(TraceShrink, FifoWithWriterIsRead) {
  // A pipe stays a supported input (e.g. `trainscope analyze <(zcat trace.json.gz)`).
  std::string p = test::temp_dir() + "/writer.fifo";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::string text = big_trace(1);
  // Hold a read end open first, so the writer's open does not wait and the reader below
  // finds a connected writer (our open never waits for one).
  int holder = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(holder, 0);
  std::atomic<bool> opened{false}, wrote{false};
  std::thread writer([&] {
    int fd = ::open(p.c_str(), O_WRONLY);
    opened = true;
    size_t off = 0;
    while (fd >= 0 && off < text.size()) {
      ssize_t n = ::write(fd, text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fd);
    wrote = off == text.size();
  });
  while (!opened) std::this_thread::yield();
  EventStore s = read_trace(p);
  ::close(holder);
  writer.join();
  EXPECT_TRUE(wrote.load());
  size_t expected = 0;
  for (size_t at = text.find("\"ph\""); at != std::string::npos; at = text.find("\"ph\"", at + 1)) ++expected;
  EXPECT_EQ(s.size(), expected);
}

TEST(TraceShrink, GzipWithCutMemberIsOneLine) {
  // A real fixture's gzip cut inside its (only) member, as a copy in progress leaves it.
  std::string gz = test::read_file(test::data_path("hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  std::string p = test::temp_dir() + "/cut.json.gz";
  test::write_file(p, gz.substr(0, gz.size() / 2));
  std::string e = error_of(p);
  EXPECT_EQ(e.find(p + ": byte "), 0u) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

}  // namespace
}  // namespace ts::trace
