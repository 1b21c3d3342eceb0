// The GPU timeline per step (gpu_timeline.cpp) on the real traces in tests/data: its invariants,
// its busy share against the per-step busy time gpu_time.cpp computes independently, and the
// alexnet warm-up gap worked out by hand from the trace.
#include <gtest/gtest.h>

#include <cstdlib>

#include "analysis/trace_analysis.h"
#include "analysis/trace_fixtures.h"
#include "trace/reader.h"

namespace ts::analysis {
namespace {

const char* kFixtures[] = {
    "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
    kAlexnet,
    "hta_triton_example_triton_example.json.gz",
    "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta_nccl_parser_config_nccl_data.json.gz",
    "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta_trace_filter_sampled_rank-0.json.gz",
};

// Every drawn step: its runs cover all 600 bins; a run shows idle (busy < 100) exactly when it
// names an entry or -2; entries index gpu.idle_attribution. Its mean busy share is within 5
// points of Step::gpu_busy_ns / duration (gpu_time.cpp's per-step union): each bin is rounded
// to the nearest 10, so off by at most 5 per bin.
TEST(GpuTimelineFixtures, RunsCoverEveryBinAndMatchTheStepsBusyTime) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const TraceAnalysis a = analyse_fixture(name);
    const GpuTimeline& tl = a.timeline;
    ASSERT_EQ(tl.bins, kTimelineBins);
    EXPECT_EQ(tl.steps_total, static_cast<int64_t>(a.steps.steps.size()));
    EXPECT_EQ(tl.steps.size(), std::min<size_t>(a.steps.steps.size(), kTimelineSteps));
    size_t si = 0;
    for (const StepTimeline& st : tl.steps) {
      SCOPED_TRACE(st.number);
      while (si < a.steps.steps.size() && a.steps.steps[si].number != st.number) ++si;
      ASSERT_LT(si, a.steps.steps.size()) << "drawn steps are steps of the window, in order";
      const Step& step = a.steps.steps[si];
      EXPECT_EQ(st.start_ns, step.start_ns);
      EXPECT_EQ(st.duration_ns, step.duration());
      int64_t bins = 0, busy_pct_bins = 0;
      for (const TimelineRun& r : st.runs) {
        ASSERT_GT(r.bins, 0);
        EXPECT_EQ(r.busy_pct % 10, 0);
        EXPECT_EQ(r.busy_pct < 100, r.entry != -1) << r.busy_pct << " " << r.entry;
        EXPECT_GE(r.entry, -2);
        EXPECT_LT(r.entry, static_cast<int32_t>(a.gpu.attribution.entries.size()));
        bins += r.bins;
        busy_pct_bins += int64_t{r.bins} * r.busy_pct;
      }
      EXPECT_EQ(bins, kTimelineBins);
      const double mean_busy = static_cast<double>(busy_pct_bins) / kTimelineBins;
      EXPECT_NEAR(mean_busy, 100.0 * step.gpu_busy_ns / step.duration(), 5.0);
    }
  }
}

// alexnet: one synthetic step. The first convolution's first cudaFree, [1695835573927794,
// +6008692) µs, lies wholly inside an idle gap, and its bucket (set-up, cudaFree in
// aten::conv2d, 6,533,728 µs with the two later cudaFree calls) is the largest entry, index 0
// (IdleAttributionFixtures.AlexnetWarmUpIsCudnnSetUp). So every bin wholly inside that call is
// idle (busy 0) and names entry 0: the step is the whole trace, 43,425 ms, so a bin is ~72 ms
// wide and the 6 s call holds 6008.692 / 72.38 = 83 bins less the partial ones at its ends.
TEST(GpuTimelineFixtures, AlexnetWarmUpGapNamesTheCudaFree) {
  const TraceAnalysis a = analyse_fixture(kAlexnet);
  ASSERT_EQ(a.timeline.steps.size(), 1u);
  ASSERT_FALSE(a.gpu.attribution.entries.empty());
  ASSERT_EQ(a.gpu.attribution.entries[0].host_event, "cudaFree");
  const StepTimeline& st = a.timeline.steps[0];
  const int64_t free_begin = 1695835573927794 * us, free_end = free_begin + 6008692 * us;
  int64_t bin = 0, inside = 0;
  for (const TimelineRun& r : st.runs) {
    for (int32_t k = 0; k < r.bins; ++k, ++bin) {
      const int64_t b0 = st.start_ns + st.duration_ns * bin / kTimelineBins;
      const int64_t b1 = st.start_ns + st.duration_ns * (bin + 1) / kTimelineBins;
      if (b0 < free_begin || b1 > free_end) continue;
      ++inside;
      EXPECT_EQ(r.busy_pct, 0) << "bin " << bin;
      EXPECT_EQ(r.entry, 0) << "bin " << bin;
    }
  }
  // 6,008,692 µs / bin width, less at most one partial bin at each end.
  const int64_t width = st.duration_ns / kTimelineBins;
  EXPECT_GE(inside, 6008692 * us / width - 2);
  EXPECT_LE(inside, 6008692 * us / width);
}

}  // namespace
}  // namespace ts::analysis
