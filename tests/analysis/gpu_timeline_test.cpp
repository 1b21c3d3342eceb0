// The GPU timeline per step (gpu_timeline.cpp) on hand-built traces and hand-built idle pieces:
// every run below is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;

struct Built {
  StoreBuilder b;
  std::unique_ptr<TraceIndex> idx;
  StepSummary steps;
  GpuTime gpu;
};

// Steps and index for the store `fill` builds; the idle pieces are given, not computed, so the
// test checks the timeline alone.
void build(Built& x, const std::function<void(StoreBuilder&)>& fill, std::vector<IdlePiece> pieces, int entries) {
  fill(x.b);
  x.idx = std::make_unique<TraceIndex>(x.b.s);
  x.steps = analyse_steps(*x.idx, {});
  x.gpu.present = true;
  x.gpu.attribution.present = true;
  x.gpu.attribution.entries.resize(static_cast<size_t>(entries));
  x.gpu.attribution.pieces = std::move(pieces);
}

std::vector<std::tuple<int, int, int>> runs_of(const StepTimeline& s) {
  std::vector<std::tuple<int, int, int>> v;
  for (const auto& r : s.runs) v.emplace_back(r.bins, r.busy_pct, r.entry);
  return v;
}

TEST(GpuTimeline, RunsOfBusyAndIdleByEntry) {
  // Step [0,600) µs, 600 bins of 1 µs. Kernels [100,300) and [400,450); the gap [300,400) is two
  // pieces: [300,350) entry 0 and [350,400) entry 1. Before 100 and after 450 the GPU has no gap
  // (outside its active span): -2.
  Built x;
  build(x, [](StoreBuilder& b) {
    b.host("ProfilerStep#1", 0, 600, Category::UserAnnotation);
    b.runtime("cudaLaunchKernel", 50, 5, 1);
    b.kernel("k1", 100, 200, 1);
    b.runtime("cudaLaunchKernel", 350, 5, 2);
    b.kernel("k2", 400, 50, 2);
  }, {{300 * us, 350 * us, 0}, {350 * us, 400 * us, 1}}, 2);
  ASSERT_EQ(x.steps.steps.size(), 1u);
  const GpuTimeline tl = analyse_gpu_timeline(*x.idx, x.steps, x.gpu);
  EXPECT_EQ(tl.bins, kTimelineBins);
  ASSERT_EQ(tl.steps.size(), 1u);
  EXPECT_EQ(tl.steps[0].duration_ns, 600 * us);
  const std::vector<std::tuple<int, int, int>> want = {
      {100, 0, -2}, {200, 100, -1}, {50, 0, 0}, {50, 0, 1}, {50, 100, -1}, {150, 0, -2}};
  EXPECT_EQ(runs_of(tl.steps[0]), want);
}

TEST(GpuTimeline, AGapNarrowerThanABinStillShows) {
  // Step [0,1200) µs: bins of 2 µs. Kernels [1,601) and [602,1200). Bin 0 [0,2) is half busy,
  // its idle half before the first kernel (-2); bin 300 [600,602) is half busy, its idle half
  // the piece [601,602) of entry 0.
  Built x;
  build(x, [](StoreBuilder& b) {
    b.host("ProfilerStep#1", 0, 1200, Category::UserAnnotation);
    b.runtime("cudaLaunchKernel", 0, 0.5, 1);
    b.kernel("k1", 1, 600, 1);
    b.runtime("cudaLaunchKernel", 0.5, 0.5, 2);
    b.kernel("k2", 602, 598, 2);
  }, {{601 * us, 602 * us, 0}}, 1);
  const GpuTimeline tl = analyse_gpu_timeline(*x.idx, x.steps, x.gpu);
  ASSERT_EQ(tl.steps.size(), 1u);
  const std::vector<std::tuple<int, int, int>> want = {{1, 50, -2}, {299, 100, -1}, {1, 50, 0}, {299, 100, -1}};
  EXPECT_EQ(runs_of(tl.steps[0]), want);
}

TEST(GpuTimeline, AtMostTwelveStepsWithTheSlowest) {
  // 30 steps of 100 µs, step 17 (index 16) 300 µs long; each launches one 50 µs kernel.
  Built x;
  build(x, [](StoreBuilder& b) {
    double t = 0;
    for (int i = 0; i < 30; ++i) {
      const double len = i == 16 ? 300 : 100;
      b.host("ProfilerStep#" + std::to_string(i + 1), t, len, Category::UserAnnotation);
      b.runtime("cudaLaunchKernel", t + 1, 1, i + 1);
      b.kernel("k", t + 10, 50, i + 1);
      t += len;
    }
  }, {}, 0);
  ASSERT_EQ(x.steps.steps.size(), 30u);
  const GpuTimeline tl = analyse_gpu_timeline(*x.idx, x.steps, x.gpu);
  EXPECT_EQ(tl.steps_total, 30);
  ASSERT_EQ(tl.steps.size(), static_cast<size_t>(kTimelineSteps));
  // Evenly spaced indices k x 29 / 11: 0 2 5 7 10 13 15 18 21 23 26 29; index 15 is the nearest
  // to the slowest (16) and gives way to it.
  std::vector<int64_t> numbers;
  for (const auto& s : tl.steps) numbers.push_back(s.number);
  const std::vector<int64_t> want = {1, 3, 6, 8, 11, 14, 17, 19, 22, 24, 27, 30};
  EXPECT_EQ(numbers, want);
}

}  // namespace
}  // namespace ts::analysis
