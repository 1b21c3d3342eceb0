// The run's own text (run_text) on results built in memory: lines that must appear only where
// their measurement is there.
#include <gtest/gtest.h>

#include "run/run_text.h"

namespace ts::run {
namespace {

RunResult uneven_steps(double data_wait_ms) {
  RunResult r;
  r.wall_s = 80;
  auto& e = r.agent.evidence;
  e.steps = 732;
  e.step_source = "optimizer";
  e.step_ms = 76.8;        // the median episode
  e.step_mean_ms = 104.9;  // the mean: longer episodes later (pytorch/examples reinforce.py)
  e.data_wait_ms = data_wait_ms;
  e.data_wait_pct = 100 * data_wait_ms / e.step_mean_ms;
  return r;
}

const char* kNote = "the median step hides the steps that wait";

TEST(RunText, TheMeanWaitNoteNeedsAWait) {
  RunOptions opt;
  opt.command = {"python", "reinforce.py"};
  // An RL loop: no DataLoader, steps of uneven length. No wait to hide: no note.
  EXPECT_EQ(run_text(uneven_steps(0), opt, {false, 1000}).find(kNote), std::string::npos);
  // The same steps with a data wait: the note says the wait is a mean.
  EXPECT_NE(run_text(uneven_steps(12.5), opt, {false, 1000}).find(kNote), std::string::npos);
}

}  // namespace
}  // namespace ts::run
