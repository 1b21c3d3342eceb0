// The live panel's content (LivePanelModel) on step records built by hand: medians of the last
// steps per phase, the better step marker restarting the count, GPU times joined late, the top
// finding and its gain, and every line within the width. The terminal side is tested in tmux
// (tests/cli/live_view_test.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "run/live_panel.h"

using namespace ts::run;

namespace {

StepRecord step(int64_t n, int64_t dur_ms, int64_t wait_ms, int64_t flags = kStepOptimizer) {
  StepRecord s;
  s.pid = 100;
  s.step = n;
  s.flags = flags;
  s.t_end_ns = n * dur_ms * 1000000;
  s.dur_ns = dur_ms * 1000000;
  s.data_wait_ns = wait_ms * 1000000;
  s.h2d_ns = 1000000;
  s.fwd_ns = 5000000;
  s.bwd_ns = 7000000;
  s.opt_ns = 2000000;
  return s;
}

}  // namespace

TEST(LivePanelModel, WaitsForTheFirstStep) {
  LivePanelModel m;
  auto l = m.lines(100, 3.2);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0], "trainscope live · 0:03 · waiting for the first training step");
  EXPECT_EQ(l[2], "  top finding so far: none yet");
}

TEST(LivePanelModel, MediansOfTheLastSteps) {
  LivePanelModel m;
  // 50 steps of 40 ms (30 waiting), then 2 outliers: the medians do not move.
  for (int i = 1; i <= 50; ++i) m.on_step(step(i, 40, 30));
  m.on_step(step(51, 400, 390));
  m.on_step(step(52, 400, 390));
  m.on_gpu({100, 52, 9000000});
  m.on_gpu({100, 51, 11000000});
  m.on_gpu({999, 50, 1});  // another process: not shown
  auto l = m.lines(200, 75);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].rfind("trainscope live · 1:15 · step 52 · ", 0), 0u) << l[0];
  EXPECT_NE(l[0].find("median step 40.0 ms (last 52 steps)"), std::string::npos) << l[0];
  EXPECT_EQ(l[1], "  median ms: data wait 30.0 · H2D 1.0 · forward 5.0 · backward 7.0 · optimizer 2.0 · GPU 10.0");
  EXPECT_EQ(l[2], "  top finding so far: none");
  EXPECT_EQ(m.steps(), 52);
}

TEST(LivePanelModel, ABetterMarkerRestartsAndTheWindowSlides) {
  LivePanelModel m;
  for (int i = 1; i <= 5; ++i) m.on_step(step(i, 10, 0, kStepForward));
  for (int i = 1; i <= 3; ++i) m.on_step(step(i, 20, 0));  // optimizer steps: the loop's
  m.on_step(step(6, 10, 0, kStepForward));                 // a weaker marker is no longer counted
  EXPECT_EQ(m.steps(), 3);
  EXPECT_NE(m.lines(200, 1)[0].find("median step 20.0 ms (last 3 steps)"), std::string::npos);
  for (int i = 4; i <= 1000; ++i) m.on_step(step(i, 30, 0));
  EXPECT_NE(m.lines(200, 1)[0].find(fmt::format("median step 30.0 ms (last {} steps)", LivePanelModel::kWindowSteps)),
            std::string::npos);
}

TEST(LivePanelModel, TopFindingAndWidth) {
  LivePanelModel m;
  for (int i = 1; i <= 10; ++i) m.on_step(step(i, 40, 30));
  m.set_top_finding(LiveFinding{"dataloader-starvation", "high", "Training loop waiting for data: loading takes 75% of each step", 0.75});
  auto l = m.lines(200, 1);
  EXPECT_EQ(l[2], "  top finding so far: [high] dataloader-starvation: Training loop waiting for data: loading takes 75% "
                  "of each step (up to 4.0x)");
  for (const auto& line : m.lines(50, 1)) {
    size_t cols = 0;
    for (char c : line) cols += (c & 0xC0) != 0x80;
    EXPECT_LE(cols, 50u) << line;
  }
  EXPECT_NE(m.lines(50, 1)[2].find("…"), std::string::npos);
}
