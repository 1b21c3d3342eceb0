// traceEvents parsed on several threads (src/trace/parallel_events.cpp) must give exactly the
// store of the serial reader: the same rows, the same string ids, the same metadata, and on bad
// input the same one-line error (byte offset and text). Tiny chunks force every split path:
// events across cuts, cuts with no element start in reach, false element starts ("},{\"" in
// names, objects inside args arrays), errors right before and after a cut, truncation.
#include <gtest/gtest.h>

#include <cstring>

#include "trace/reader.h"
#include "trace/trace_test_util.h"
#include "util/error.h"

namespace ts::trace {
namespace {

using test::data_path;

using test::expect_identical;

ReadOptions serial() {
  ReadOptions o;
  o.threads = 1;
  return o;
}

ReadOptions split(int threads, uint64_t chunk, uint64_t overlap) {
  ReadOptions o;
  o.threads = threads;
  o.parallel_min_bytes = 0;
  o.chunk_bytes = chunk;
  o.chunk_overlap = overlap;
  return o;
}

// The splits every test runs: tiny chunks with a wide overlap (a start found at every cut), an
// overlap shorter than most events (cuts with no start in reach, events past the overlap),
// chunks of about one event, and the sizes a real read would choose.
std::vector<ReadOptions> splits() {
  return {split(3, 997, 700), split(2, 4096, 64), split(4, 300, 150), split(2, 0, 0)};
}

std::string error_or_none(const std::string& path, const ReadOptions& opt) {
  try {
    read_trace(path, opt);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string gzip_to(const std::string& path, const std::string& json) {
  test::write_file(path + ".tmp", json);
  int st;
  test::run_command("gzip -1 -c '" + path + ".tmp' > '" + path + "'", st);
  if (st != 0) throw std::runtime_error("gzip failed");
  return path;
}


TEST(TraceParallel, EveryFixtureGivesTheSerialStore) {
  for (const char* f : test::kFixtures) {
    const std::string gz = data_path(f);
    const bool is_gz = std::string(f).ends_with(".gz");
    const std::string plain = test::temp_dir() + "/plain_" + f + ".json";
    test::write_file(plain, is_gz ? test::gunzip_file(gz) : test::read_file(gz));
    const EventStore want = read_trace(plain, serial());
    const bool large = want.meta.input_bytes > (4u << 20);
    for (const ReadOptions& opt : splits()) {
      if (large && opt.chunk_bytes && opt.chunk_bytes < 4096) continue;  // thousands of chunks: slow, no new path
      SCOPED_TRACE(std::string(f) + " chunk " + std::to_string(opt.chunk_bytes) + " overlap " +
                   std::to_string(opt.chunk_overlap) + " threads " + std::to_string(opt.threads));
      expect_identical(want, read_trace(plain, opt));
      if (is_gz) expect_identical(want, read_trace(gz, opt));
    }
  }
}

// A trace whose text is full of false element starts: names ending in ",{" (the '"' after them
// closes the string) and objects inside args arrays. Every cut lands near one.
std::string trap_trace(int events, bool negative_tids = false) {
  std::string j = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    if (i) j += ",\n";
    const std::string ts = std::to_string(1000 + i * 10);
    switch (i % 4) {
      case 0:
        j += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" + std::to_string(i % 7) + ",{\", \"pid\": 1, \"tid\": 2, \"ts\": " +
             ts + ", \"dur\": 5}";
        break;
      case 1:
        j += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": " + ts +
             ", \"dur\": 3, \"args\": {\"list\": [{\"a\": 1}, {\"b\": [2, {\"c\": \"},{\\\"\"}]}], \"correlation\": " +
             std::to_string(i) + ", \"grid\": [1, 2, 3]}}";
        break;
      case 2:
        j += "{ \"name\": \"thread " + std::to_string(i % 5) + "\", \"ph\": \"X\", \"pid\": \"proc,{\", \"tid\": \"t" +
             std::to_string(i % 3) + "\", \"ts\": " + ts + ", \"dur\": 1, \"cat\": \"cuda_runtime\", " +
             "\"args\": {\"correlation\": " + std::to_string(i - 1) + "}}";
        break;
      default:
        // Negative numeric tids, as Kineto writes on [memory] events (numbers, not names).
        j += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " + std::to_string(negative_tids ? -(i % 9) * 1000003 : i % 9) +
             ", \"args\": {\"name\": \"worker,{\"}}";
    }
  }
  j += "\n], \"traceName\": \"x\", \"baseTimeNanoseconds\": 1700000000000000000}\n";
  return j;
}

TEST(TraceParallel, FalseElementStartsAreCaught) {
  const std::string json = trap_trace(3000);
  const std::string plain = test::temp_dir() + "/traps.json";
  test::write_file(plain, json);
  const std::string gz = gzip_to(test::temp_dir() + "/traps.json.gz", json);
  const EventStore want = read_trace(plain, serial());
  ASSERT_EQ(want.size(), 3000u);
  EXPECT_EQ(want.meta.base_time_ns, 1700000000000000000);  // after traceEvents
  for (uint64_t chunk : {101u, 233u, 1000u, 7919u})
    for (uint64_t overlap : {64u, 129u, 500u}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " overlap " + std::to_string(overlap));
      expect_identical(want, read_trace(plain, split(3, chunk, overlap)));
      expect_identical(want, read_trace(gz, split(2, chunk, overlap)));
    }
}

// Negative numeric tids (Kineto writes them on [memory] events) stay numbers when the chunk
// stores are merged (named pid/tid ids are renumbered, numbers are not).
TEST(TraceParallel, NegativeTidsMergeAsNumbers) {
  const std::string json = trap_trace(3000, true);
  const std::string plain = test::temp_dir() + "/traps_negative.json";
  test::write_file(plain, json);
  const EventStore want = read_trace(plain, serial());
  ASSERT_EQ(want.thread_names.size(), 750u);  // every 4th event is a thread_name
  EXPECT_EQ(want.thread_names[1].tid, -7 * 1000003);  // event 7: tid -(7 % 9) * 1000003
  for (uint64_t chunk : {101u, 1000u, 7919u})
    for (uint64_t overlap : {64u, 500u}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " overlap " + std::to_string(overlap));
      expect_identical(want, read_trace(plain, split(3, chunk, overlap)));
    }
}

// The same trace gzipped: the inflating source's buffers overlap more than one chunk when the
// overlap is longer than a chunk (500 > 101); the one holding the JSON's end must be kept.
TEST(TraceParallel, NegativeTidsGzipMergeAsNumbers) {
  const std::string json = trap_trace(3000, true);
  const std::string plain = test::temp_dir() + "/traps_negative.json";
  test::write_file(plain, json);
  const std::string gz = gzip_to(test::temp_dir() + "/traps_negative.json.gz", json);
  const EventStore want = read_trace(plain, serial());
  for (uint64_t chunk : {101u, 233u, 1000u, 7919u})
    for (uint64_t overlap : {64u, 129u, 500u}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " overlap " + std::to_string(overlap));
      expect_identical(want, read_trace(gz, split(2, chunk, overlap)));
    }
}

// Offsets where a chunk of `chunk` bytes would start: the first '{' at or after each cut whose
// previous non-blank byte is ','.
std::vector<size_t> element_starts_after_cuts(const std::string& j, size_t chunk) {
  std::vector<size_t> out;
  for (size_t cut = chunk; cut < j.size(); cut += chunk) {
    for (size_t p = cut; p < j.size(); ++p) {
      if (j[p] != '{') continue;
      size_t b = p;
      while (b > 0 && std::strchr(" \n\r\t", j[b - 1])) --b;
      if (b > 0 && j[b - 1] == ',') {
        out.push_back(p);
        break;
      }
    }
  }
  return out;
}

TEST(TraceParallel, ErrorsNearCutsReadAsTheSerialOnes) {
  // A real trace cut in ~1 KB chunks; bytes broken right at, before and after each chunk's
  // start, and in the middle of the event before it. The serial reader's error text (with its
  // byte offset) must come out of the parallel one, mapped and gzipped.
  const std::string json = test::gunzip_file(data_path(
      "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"));
  const size_t chunk = 1024;
  std::vector<size_t> starts = element_starts_after_cuts(json, chunk);
  ASSERT_GT(starts.size(), 100u);
  const std::string dir = test::temp_dir();
  int broken = 0, checked = 0;
  for (size_t i = 0; i < starts.size(); i += 9) {
    for (long delta : {-40L, -3L, -1L, 0L, 1L, 2L}) {
      const size_t at = starts[i] + delta;
      std::string bad = json;
      bad[at] = bad[at] == '{' ? '[' : bad[at] == ',' ? ';' : '}';
      const std::string p = dir + "/broken.json";
      test::write_file(p, bad);
      const std::string want = error_or_none(p, serial());
      broken += want != "(no error)";
      EXPECT_EQ(error_or_none(p, split(3, chunk, 256)), want) << "at " << at;
      if (delta == 0 || delta == -1) {
        const std::string g = gzip_to(dir + "/broken.json.gz", bad);
        std::string want_gz = error_or_none(g, serial());
        EXPECT_EQ(error_or_none(g, split(2, chunk, 256)), want_gz) << "gz at " << at;
      }
      ++checked;
    }
  }
  EXPECT_GT(broken, checked / 2);  // most breaks are errors (a '}' inside a string is not)
}

TEST(TraceParallel, TruncationAnywhereReadsAsTheSerialError) {
  const std::string json = trap_trace(200);
  const std::string dir = test::temp_dir();
  for (size_t len = json.size() - 2; len > 40; len -= 37) {  // -1 only drops the final newline
    const std::string p = dir + "/trunc.json";
    test::write_file(p, json.substr(0, len));
    const std::string want = error_or_none(p, serial());
    ASSERT_NE(want, "(no error)") << len;
    EXPECT_EQ(error_or_none(p, split(2, 211, 100)), want) << len;
  }
}

// The JSON after traceEvents is read from the same inflated buffers once the chunks are merged,
// and no buffer was inflated ahead of it: a long value there (many chunks) must be inflated then,
// not refused as if the read were being given up (that waited forever).
TEST(TraceParallel, GzipWithALongTailAfterTheEventsReadsToTheEnd) {
  std::string json = trap_trace(400);
  json.insert(json.rfind('}'), ", \"traceName\": \"" + std::string(200000, 'x') + "\"");
  const std::string p = gzip_to(test::temp_dir() + "/long_tail.json.gz", json);
  const EventStore want = read_trace(p, serial());
  for (const ReadOptions& opt : {split(2, 300, 150), split(3, 997, 700), split(2, 4096, 64)}) {
    SCOPED_TRACE(std::to_string(opt.chunk_bytes) + " threads " + std::to_string(opt.threads));
    expect_identical(want, read_trace(p, opt));
  }
}

TEST(TraceParallel, CorruptGzipStillReported) {
  const std::string json = trap_trace(20000);
  std::string gz = test::read_file(gzip_to(test::temp_dir() + "/good.json.gz", json));
  gz[gz.size() / 2] ^= 0x55;
  const std::string p = test::temp_dir() + "/corrupt.json.gz";
  test::write_file(p, gz);
  const std::string e = error_or_none(p, split(2, 4096, 512));
  EXPECT_NE(e.find(p + ": byte "), std::string::npos) << e;
  // A clean truncation of the compressed file: the inflater's own error text.
  test::write_file(p, gz.substr(0, gz.size() / 3));
  EXPECT_NE(error_or_none(p, split(2, 4096, 512)).find("the compressed file is truncated"), std::string::npos);
}

TEST(TraceParallel, ProgressReportsGrowingOffsets) {
  const std::string json = trap_trace(5000);
  const std::string p = test::temp_dir() + "/progress.json";
  test::write_file(p, json);
  ReadOptions opt = split(2, 4096, 512);
  uint64_t last = 0, calls = 0;
  bool monotonic = true;
  opt.progress = [&](uint64_t done, uint64_t, uint64_t) {
    monotonic = monotonic && done >= last;
    last = done;
    ++calls;
  };
  read_trace(p, opt);
  EXPECT_TRUE(monotonic);
  EXPECT_GT(calls, 10u);
  EXPECT_LE(last, json.size());
}

}  // namespace
}  // namespace ts::trace
