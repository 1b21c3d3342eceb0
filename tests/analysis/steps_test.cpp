// Step detection edge cases: incomplete tail steps, no ProfilerStep at all, GPU work launched
// before the first step, duplicate gpu_user_annotation copies of ProfilerStep#N.
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
// Step n (host [100n, 100n+100)) launches `kernels` kernels of 10 µs each.
void add_step(StoreBuilder& b, int n, int kernels, int64_t& corr) {
  b.host("ProfilerStep#" + std::to_string(n), 100.0 * n, 100, trace::Category::UserAnnotation);
  for (int k = 0; k < kernels; ++k) {
    b.runtime("cudaLaunchKernel", 100.0 * n + 10 * k, 5, ++corr);
    b.kernel("k", 100.0 * n + 10 * k + 6, 3, corr);
  }
}

TEST(Steps, DropsTailStepsWithTooLittleGpuWork) {
  StoreBuilder b;
  int64_t corr = 0;
  add_step(b, 1, 5, corr);
  add_step(b, 2, 5, corr);
  add_step(b, 3, 3, corr);  // 3 < 0.8 * 5: the profiler stopped mid-step
  add_step(b, 4, 0, corr);  // no GPU work at all
  TraceAnalysis a = analyse(b.s);
  ASSERT_EQ(a.steps.steps.size(), 2u);
  EXPECT_EQ(a.steps.dropped_tail_steps, 2);
  EXPECT_EQ(a.kernels.count, 10);
}

TEST(Steps, KeepsATailStepWithEnoughGpuWork) {
  StoreBuilder b;
  int64_t corr = 0;
  add_step(b, 1, 5, corr);
  add_step(b, 2, 4, corr);  // 4 >= 0.8 * 5
  TraceAnalysis a = analyse(b.s);
  EXPECT_EQ(a.steps.steps.size(), 2u);
  EXPECT_EQ(a.steps.dropped_tail_steps, 0);
}

TEST(Steps, NoProfilerStepGivesOneSyntheticStep) {
  StoreBuilder b;
  b.host("aten::add", 10, 20);
  b.runtime("cudaLaunchKernel", 15, 5, 1);
  b.kernel("k", 40, 30, 1);
  TraceAnalysis a = analyse(b.s);
  ASSERT_EQ(a.steps.steps.size(), 1u);
  EXPECT_TRUE(a.steps.synthetic);
  EXPECT_EQ(a.steps.steps[0].start_ns, 10 * us);
  EXPECT_EQ(a.steps.steps[0].end_ns, 70 * us);  // extended to the kernel's end
  EXPECT_EQ(a.steps.total.kernel, 30 * us);
  EXPECT_EQ(a.steps.total.total(), 60 * us);
}

TEST(Steps, EmptyTraceHasNoSteps) {
  StoreBuilder b;
  TraceAnalysis a = analyse(b.s);
  EXPECT_TRUE(a.steps.steps.empty());
  EXPECT_FALSE(a.gpu.present);
  EXPECT_FALSE(a.warnings.empty());
}

TEST(Steps, GpuWorkFromBeforeTheFirstStepDelaysItsStart) {
  StoreBuilder b;
  b.runtime("cudaLaunchKernel", 0, 5, 1);  // launched before any step
  b.kernel("warmup", 10, 120, 1);          // still running when step 1 starts at 100
  b.host("ProfilerStep#1", 100, 100, trace::Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 110, 5, 2);
  b.kernel("k", 140, 10, 2);
  TraceAnalysis a = analyse(b.s);
  ASSERT_EQ(a.steps.steps.size(), 1u);
  EXPECT_EQ(a.steps.steps[0].start_ns, 130 * us);
  EXPECT_EQ(a.steps.steps[0].end_ns, 200 * us);
}

TEST(Steps, IgnoresGpuAnnotationCopiesOfSteps) {
  StoreBuilder b;
  int64_t corr = 0;
  add_step(b, 1, 2, corr);
  b.s.add(b.id("ProfilerStep#1"), trace::Category::GpuUserAnnotation, trace::Phase::Complete, 0, 7,
          106 * us, 20 * us);
  TraceAnalysis a = analyse(b.s);
  EXPECT_EQ(a.steps.steps.size(), 1u);
}

}  // namespace
}  // namespace ts::analysis
