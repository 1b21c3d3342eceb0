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

// pytorch/examples mnist_forward_forward calls each layer's forward as `self.forward(x)`: no
// forward hook runs, and the step line said "forward 0.00" beside a backward of half the step.
TEST(RunText, AForwardTheHooksNeverSawIsSaidSoAndTheRestShown) {
  RunOptions opt;
  opt.command = {"python", "main.py"};
  RunResult r = uneven_steps(0);
  auto& e = r.agent.evidence;
  e.step_ms = 210.4;
  e.step_mean_ms = 210.4;
  e.backward_ms = 97.1;
  e.optimizer_ms = 0.7;
  std::string t = run_text(r, opt, {false, 1000});
  EXPECT_NE(t.find("forward not seen, backward 97.10"), std::string::npos) << t;
  EXPECT_NE(t.find("the rest 112.60 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("forward not seen: no module call"), std::string::npos) << t;
  // A forward the hooks timed: its figure, and no rest where the phases cover the step.
  e.forward_ms = 105.0;
  t = run_text(r, opt, {false, 1000});
  EXPECT_NE(t.find("forward 105.00, backward 97.10"), std::string::npos) << t;
  EXPECT_EQ(t.find("the rest"), std::string::npos) << t;
  EXPECT_EQ(t.find("forward not seen"), std::string::npos) << t;
}

}  // namespace
}  // namespace ts::run
