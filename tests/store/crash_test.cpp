// A recording survives kill -9 of the recorder and loses at most about one second.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "sample/sampler.h"
#include "store/recorder.h"
#include "store/store.h"

using namespace ts::store;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

TEST(Crash, KillNineLosesAtMostOneSecond) {
  char tmpl[] = "/tmp/ts_crash_XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  const std::string db = (dir / "rec.db").string();
  const std::string csv = (dir / "rec.csv").string();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    // The recorder: host sampling every 20 ms into SQLite and CSV, until killed.
    ts::sample::SamplerConfig c;
    c.interval = 20ms;
    c.root_pid = getpid();
    c.use_nvml = false;
    ts::sample::Sampler s(c);
    Recorder rec({db, csv, "watch", "crash test", 1.0}, s);
    s.start([&](const ts::sample::Tick& t) { rec.on_tick(t); });
    char x = 1;
    (void)!write(ready[1], &x, 1);
    for (;;) pause();
  }
  close(ready[1]);
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  std::this_thread::sleep_for(2700ms);  // not on a commit boundary
  const double killed_at = unix_now();
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  Store s(db);
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].finished_unix, -1);  // it never finished
  auto ticks = s.ticks(runs[0].id);
  ASSERT_GE(ticks.size(), 20u);  // > 1.5 s of 20 ms ticks survived
  const double lost = killed_at - ticks.back().unix_s;
  // One second, plus a little scheduling slack on a loaded machine.
  EXPECT_LE(lost, 1.1) << "lost " << lost << " s of samples";
  EXPECT_GE(lost, 0);
  // Every surviving tick is complete (host row with its data).
  for (const auto& t : ticks) EXPECT_GE(t.host.cpu_busy_pct, 0);
  EXPECT_GT(fs::file_size(csv), 100u);
  fs::remove_all(dir);
}
