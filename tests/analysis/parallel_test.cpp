// Optimizer implementation, DataParallel / DDP, torch.compile detection, and the per-rank table.
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;

TraceAnalysis one_step(const std::function<void(StoreBuilder&)>& body) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  body(b);
  return analyse(b.s);
}

TEST(Parallel, FusedOptimizerAndDataParallel) {
  TraceAnalysis a = one_step([](StoreBuilder& b) {
    b.host("DataParallel.forward", 10, 100, Category::UserAnnotation);
    b.host("Optimizer.step#AdamW.step", 500, 100, Category::UserAnnotation);
    b.host("aten::_fused_adamw_", 510, 50);
    b.runtime("cudaLaunchKernel", 520, 5, 1);
    b.kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", 530, 20, 1);
  });
  EXPECT_TRUE(a.parallel.data_parallel);
  EXPECT_FALSE(a.parallel.ddp);
  EXPECT_EQ(a.parallel.optimizer, "AdamW");
  EXPECT_EQ(a.parallel.optimizer_impl, "fused");
  EXPECT_EQ(a.parallel.optimizer_kernels_per_step, 1);
}

TEST(Parallel, SingleTensorOptimizerFromItsPerParameterOps) {
  TraceAnalysis a = one_step([](StoreBuilder& b) {
    b.host("DistributedDataParallel.forward", 10, 100, Category::UserAnnotation);
    b.host("Optimizer.step#SGD.step", 500, 100, Category::UserAnnotation);
    b.host("aten::add_", 510, 5);
    b.host("aten::add_", 520, 5);
  });
  EXPECT_TRUE(a.parallel.ddp);
  EXPECT_FALSE(a.parallel.data_parallel);
  EXPECT_EQ(a.parallel.optimizer, "SGD");
  EXPECT_EQ(a.parallel.optimizer_impl, "single_tensor");
}

TEST(Parallel, SingleTensorFromPythonFunctionNames) {
  TraceAnalysis a = one_step([](StoreBuilder& b) {
    b.host("Optimizer.step#Adam.step", 500, 100, Category::UserAnnotation);
    b.host("torch/optim/adam.py(300): _single_tensor_adam", 505, 90, Category::PythonFunction);
  });
  EXPECT_EQ(a.parallel.optimizer_impl, "single_tensor");
}

TEST(Parallel, NoOptimizerIsUnknown) {
  TraceAnalysis a = one_step([](StoreBuilder& b) { b.host("aten::mm", 10, 10); });
  EXPECT_EQ(a.parallel.optimizer, "");
  EXPECT_EQ(a.parallel.optimizer_impl, "unknown");
}

TEST(Parallel, CompiledRegionsAndTritonKernels) {
  TraceAnalysis a = one_step([](StoreBuilder& b) {
    b.host("Torch-Compiled Region: 0/0", 10, 100, Category::UserAnnotation);
  });
  EXPECT_TRUE(a.parallel.compiled);
  TraceAnalysis t = one_step([](StoreBuilder& b) {
    b.s.add(b.id("cuLaunchKernel"), Category::CudaDriver, trace::Phase::Complete, 100, 100, 10'000,
            5'000, 7);
    b.kernel("triton_poi_fused_add_cos_sin_0", 20, 2, 7);
  });
  EXPECT_TRUE(t.parallel.compiled);
  EXPECT_EQ(t.kernels.triton_kernels, 1);
  EXPECT_EQ(t.kernels.launch.launches, 1);  // driver-launched kernels are linked too
  EXPECT_EQ(t.steps.total.runtime, 5'000);  // cuLaunchKernel counts as runtime
}

TraceAnalysis rank(int r, int64_t median_step_ms, double comm_pct) {
  TraceAnalysis a;
  a.path = "rank" + std::to_string(r) + ".json";
  a.parallel.rank = r;
  a.steps.steps.resize(4);
  a.steps.median_step_ns = median_step_ms * 1'000'000;
  a.steps.total_ns = 4 * a.steps.median_step_ns;
  a.parallel.comm_pct_of_step = comm_pct;
  return a;
}

TEST(MultiTrace, StragglerIsTheSlowestRankAndOthersWaitForIt) {
  std::vector<TraceAnalysis> v;
  v.push_back(rank(2, 100, 30.0));  // 30 ms of collectives per step
  v.push_back(rank(0, 100, 32.0));  // 32 ms
  v.push_back(rank(1, 120, 5.0));   // the straggler: 6 ms, it arrives last
  MultiTraceAnalysis m = compare_ranks(std::move(v));
  ASSERT_EQ(m.ranks.size(), 3u);
  EXPECT_EQ(m.ranks[0].rank, 0);  // sorted by rank
  EXPECT_EQ(m.straggler_rank, 1);
  EXPECT_TRUE(m.ranks[1].straggler);
  EXPECT_EQ(m.straggler_gap_ns, 20'000'000);
  EXPECT_NEAR(m.ranks[1].comm_ns_per_step, 6e6, 1);
  EXPECT_NEAR(m.ranks[0].wait_ns_per_step, 32e6 - 6e6, 1);
  EXPECT_NEAR(m.ranks[2].wait_ns_per_step, 30e6 - 6e6, 1);
  EXPECT_EQ(m.ranks[1].wait_ns_per_step, 0);
  EXPECT_EQ(m.traces[0].path, "rank2.json");  // traces keep their input order
}

TEST(MultiTrace, OneTraceHasNoStraggler) {
  std::vector<TraceAnalysis> v;
  v.push_back(rank(0, 100, 10.0));
  MultiTraceAnalysis m = compare_ranks(std::move(v));
  EXPECT_EQ(m.straggler_rank, -1);
  EXPECT_FALSE(m.ranks[0].straggler);
}

}  // namespace
}  // namespace ts::analysis
