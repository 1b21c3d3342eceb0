// A recording survives kill -9 of the recorder and loses at most about one second.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "sample/sampler.h"
#include "store/recorder.h"
#include "store/store.h"

using namespace ts::store;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// What the guarantee is about: the ticks the recorder was handed. The child reports each tick's
// time on a pipe once on_tick returned, so the test compares what was handed over with what
// survived, both in the ticks' own timestamps. Scheduling delays (ctest -j, a loaded machine)
// stretch the time between ticks but not this comparison: no wall-clock bound is asserted.
TEST(Crash, KillNineLosesAtMostOneSecond) {
  char tmpl[] = "/tmp/ts_crash_XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  const std::string db = (dir / "rec.db").string();
  const std::string csv = (dir / "rec.csv").string();
  int handed[2];
  ASSERT_EQ(pipe(handed), 0);
  pid_t child = fork();
  if (child == 0) {
    close(handed[0]);
    // The recorder: host sampling every 20 ms into SQLite and CSV, until killed.
    ts::sample::SamplerConfig c;
    c.interval = 20ms;
    c.root_pid = getpid();
    c.use_nvml = false;
    ts::sample::Sampler s(c);
    Recorder rec({db, csv, "watch", "crash test", 1.0}, s);
    s.start([&](const ts::sample::Tick& t) {
      rec.on_tick(t);
      (void)!write(handed[1], &t.unix_s, sizeof t.unix_s);  // <= PIPE_BUF: atomic
    });
    for (;;) pause();
  }
  close(handed[1]);
  // Read the handed-over ticks until at least 2.7 s of them (not on a commit boundary).
  std::vector<double> given;
  double t;
  while (read(handed[0], &t, sizeof t) == sizeof t) {
    given.push_back(t);
    if (given.back() - given.front() >= 2.7) break;
  }
  ASSERT_FALSE(given.empty()) << "the recorder never reported a tick";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  while (read(handed[0], &t, sizeof t) == sizeof t) given.push_back(t);  // up to the kill
  close(handed[0]);

  Store s(db);
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].finished_unix, -1);  // it never finished
  auto ticks = s.ticks(runs[0].id);
  ASSERT_GE(ticks.size(), 20u);  // > 1.5 s of 20 ms ticks survived
  // Lost: the ticks handed over after the last one that survived. Their span (plus the one
  // tick interval each covers) is at most the one second the store promises.
  const double last_kept = ticks.back().unix_s;
  double first_lost = -1, last_lost = -1;
  for (double g : given)
    if (g > last_kept) {
      if (first_lost < 0) first_lost = g;
      last_lost = g;
    }
  const double lost = first_lost < 0 ? 0 : last_lost - first_lost + 0.020;
  EXPECT_LE(lost, 1.0) << "lost " << lost << " s of handed-over ticks";
  // Every surviving tick is complete (host row with its data).
  for (const auto& tk : ticks) EXPECT_GE(tk.host.cpu_busy_pct, 0);
  EXPECT_GT(fs::file_size(csv), 100u);
  fs::remove_all(dir);
}
