// Every analysis on a small hand-made trace whose expected values were worked out by hand
// (the timeline is drawn below; all times in µs).
//
//  step 1 host [0,100)   DataLoader [5,35)  aten::linear [40,80)
//                        cudaLaunchKernel [50,55) c1 -> volta_sgemm [60,90) stream 7, grid 40, occ 50
//                        cudaMemcpyAsync  [70,75) c2 -> Memcpy HtoD (Pageable -> Device) [92,110) 1.8 MB
//  step 2 host [100,200) aten::item [120,150) > _local_scalar_dense [121,149) >
//                          cudaMemcpyAsync [122,126) c3 -> Memcpy DtoH (Device -> Pageable) [130,132) 4 B
//                          cudaStreamSynchronize [127,148) c6 (+ cuda_sync "Stream Sync" c6)
//                        aten::mm bf16 [152,154) dims 64x100x128 (misaligned), aten::addmm bf16 [153,154)
//                        cudaLaunchKernel [155,160) c4 -> ncclKernel_AllReduce [165,185) stream 20, grid 8
//                        cudaLaunchKernel [160,164) c5 -> ampere_bf16_s16816gemm [170,195) stream 7, grid 160, occ 25
//                        Optimizer.step#AdamW.step [185,199) > aten::_foreach_add_ [186,190)
//  memory: t=10 1000/2000, t=105 3000/4000, t=150 2500/4000, t=250 9000/9000 (allocated/reserved)
// Steps after extension: [0,110) and [110,200).
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;
trace::EventStore make_trace() {
  StoreBuilder b;
  b.device(0, 32'000'000'000, 80, 8, 0, "A100");
  b.host("ProfilerStep#1", 0, 100, trace::Category::UserAnnotation);
  b.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5, 30,
         trace::Category::UserAnnotation);
  b.host("aten::linear", 40, 40);
  b.runtime("cudaLaunchKernel", 50, 5, 1);
  b.kernel("volta_sgemm_128x64_nn", 60, 30, 1, 7, 40, 50);
  b.runtime("cudaMemcpyAsync", 70, 5, 2);
  b.copy("Memcpy HtoD (Pageable -> Device)", 92, 18, 2, 1'800'000);

  b.host("ProfilerStep#2", 100, 100, trace::Category::UserAnnotation);
  b.host("aten::item", 120, 30);
  b.host("aten::_local_scalar_dense", 121, 28);
  b.runtime("cudaMemcpyAsync", 122, 4, 3);
  b.copy("Memcpy DtoH (Device -> Pageable)", 130, 2, 3, 4);
  b.runtime("cudaStreamSynchronize", 127, 21, 6);
  b.sync_event("Stream Sync", 127.5, 20, 6);
  b.op_with_shapes("aten::mm", 152, 2, "[[64, 100], [100, 128]]", "[\"c10::BFloat16\", \"c10::BFloat16\"]");
  b.op_with_shapes("aten::addmm", 153, 1, "[[128], [64, 128], [128, 256], [], []]",
                   "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]");
  b.runtime("cudaLaunchKernel", 155, 5, 4);
  b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 165, 20,
           4, 20, 8);
  b.runtime("cudaLaunchKernel", 160, 4, 5);
  b.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", 170, 25, 5, 7, 160, 25);
  b.host("Optimizer.step#AdamW.step", 185, 14, trace::Category::UserAnnotation);
  b.host("aten::_foreach_add_", 186, 4);

  b.memory(10, 1000, 2000);
  b.memory(105, 3000, 4000);
  b.memory(150, 2500, 4000);
  b.memory(250, 9000, 9000);
  return std::move(b.s);
}

class Synthetic : public ::testing::Test {
 protected:
  void SetUp() override {
    store = make_trace();
    a = analyse(store);
  }
  trace::EventStore store;
  TraceAnalysis a;
};

TEST_F(Synthetic, StepsAreExtendedToTheirGpuWork) {
  ASSERT_EQ(a.steps.steps.size(), 2u);
  EXPECT_FALSE(a.steps.synthetic);
  EXPECT_EQ(a.steps.steps[0].number, 1);
  EXPECT_EQ(a.steps.steps[0].start_ns, 0);
  EXPECT_EQ(a.steps.steps[0].host_end_ns, 100 * us);
  EXPECT_EQ(a.steps.steps[0].end_ns, 110 * us);  // the HtoD copy ends at 110
  EXPECT_EQ(a.steps.steps[1].start_ns, 110 * us);
  EXPECT_EQ(a.steps.steps[1].end_ns, 200 * us);
  EXPECT_EQ(a.steps.total_ns, 200 * us);
  EXPECT_EQ(a.steps.median_step_ns, 100 * us);  // (110 + 90) / 2
  EXPECT_EQ(a.steps.dropped_tail_steps, 0);
}

TEST_F(Synthetic, BreakdownByPriorityCoversEveryNanosecond) {
  const Breakdown& s1 = a.steps.steps[0].breakdown;
  EXPECT_EQ(s1.kernel, 30 * us);
  EXPECT_EQ(s1.memcpy, 18 * us);
  EXPECT_EQ(s1.runtime, 5 * us);  // [70,75) lies under the kernel
  EXPECT_EQ(s1.dataloader, 30 * us);
  EXPECT_EQ(s1.cpu_exec, 15 * us);  // linear [40,80) less kernel and runtime
  EXPECT_EQ(s1.other, 12 * us);
  EXPECT_EQ(s1.total(), 110 * us);

  const Breakdown& s2 = a.steps.steps[1].breakdown;
  EXPECT_EQ(s2.kernel, 25 * us);
  EXPECT_EQ(s2.memcpy, 2 * us);
  EXPECT_EQ(s2.communication, 5 * us);  // [165,170): the rest is under the bf16 GEMM
  EXPECT_EQ(s2.runtime, 32 * us);
  EXPECT_EQ(s2.dataloader, 0);
  EXPECT_EQ(s2.cpu_exec, 11 * us);
  EXPECT_EQ(s2.other, 15 * us);
  EXPECT_EQ(s2.total(), 90 * us);

  const Breakdown& t = a.steps.total;
  EXPECT_EQ(t.kernel, 55 * us);
  EXPECT_EQ(t.communication, 5 * us);
  EXPECT_EQ(t.runtime, 37 * us);
  EXPECT_EQ(t.cpu_exec, 26 * us);
  EXPECT_EQ(t.other, 27 * us);
  EXPECT_EQ(t.total(), a.steps.total_ns);
  EXPECT_DOUBLE_EQ(a.steps.pct(t.dataloader), 15.0);
}

TEST_F(Synthetic, GpuTimeAndIdleAttribution) {
  EXPECT_TRUE(a.gpu.present);
  EXPECT_EQ(a.gpu.devices, 1);
  EXPECT_EQ(a.gpu.span_ns, 135 * us);
  EXPECT_EQ(a.gpu.busy_ns, 80 * us);
  EXPECT_EQ(a.gpu.idle_ns, 55 * us);
  EXPECT_EQ(a.gpu.compute_ns, 55 * us);
  EXPECT_EQ(a.gpu.non_compute_ns, 25 * us);
  EXPECT_NEAR(a.gpu.idle_pct, 100.0 * 55 / 135, 1e-9);
  EXPECT_EQ(a.gpu.idle_host_wait_ns, 53 * us);  // gaps [110,130) and [132,165)
  EXPECT_EQ(a.gpu.idle_kernel_wait_ns, 2 * us);
  EXPECT_EQ(a.gpu.idle_other_ns, 0);
  EXPECT_DOUBLE_EQ(a.gpu.utilization_pct, 30.0);
  EXPECT_NEAR(a.gpu.est_sm_efficiency_pct, 21.0, 1e-9);
  EXPECT_NEAR(a.gpu.est_occupancy_pct, (30.0 * 50 + 25.0 * 25) / 55, 1e-4);
  EXPECT_EQ(a.steps.steps[0].gpu_busy_ns, 48 * us);
  EXPECT_EQ(a.steps.steps[1].gpu_busy_ns, 32 * us);
}

TEST_F(Synthetic, KernelsAndLaunches) {
  EXPECT_EQ(a.kernels.count, 3);
  EXPECT_DOUBLE_EQ(a.kernels.per_step, 1.5);
  EXPECT_EQ(a.kernels.total_ns, 75 * us);
  EXPECT_EQ(a.kernels.median_ns, 25 * us);
  EXPECT_DOUBLE_EQ(a.kernels.under_10us_pct, 0.0);
  ASSERT_EQ(a.kernels.top.size(), 3u);
  EXPECT_EQ(a.kernels.top[0].name, "volta_sgemm_128x64_nn");
  EXPECT_NEAR(a.kernels.top[0].share_pct, 40.0, 1e-9);
  EXPECT_EQ(a.steps.steps[0].kernels, 1);
  EXPECT_EQ(a.steps.steps[1].kernels, 2);
  EXPECT_EQ(a.kernels.launch.launches, 3);
  EXPECT_EQ(a.kernels.launch.median_launch_delay_ns, 5 * us);
  EXPECT_EQ(a.kernels.launch.median_runtime_ns, 5 * us);
  EXPECT_EQ(a.kernels.launch.short_kernels, 0);
  EXPECT_EQ(a.kernels.launch.runtime_outliers, 0);
}

TEST_F(Synthetic, CopiesByDirectionAndKind) {
  ASSERT_EQ(a.copies.rows.size(), 2u);
  EXPECT_EQ(a.copies.rows[0].direction, "HtoD");
  EXPECT_EQ(a.copies.rows[0].kind, "pageable");
  EXPECT_EQ(a.copies.rows[0].bytes, 1'800'000);
  EXPECT_DOUBLE_EQ(a.copies.rows[0].bandwidth_gbps, 100.0);
  EXPECT_EQ(a.copies.rows[1].direction, "DtoH");
  EXPECT_EQ(a.copies.rows[1].kind, "pageable");
  EXPECT_EQ(a.copies.pageable_count, 2);
  EXPECT_EQ(a.copies.pageable_bytes, 1'800'004);
  EXPECT_EQ(a.copies.pageable_time_ns, 20 * us);
  EXPECT_EQ(a.copies.blocking_memcpy_calls, 0);
  EXPECT_DOUBLE_EQ(a.copies.per_step, 1.0);
}

TEST_F(Synthetic, SyncsCountOneItemOnce) {
  EXPECT_EQ(a.syncs.count, 1);  // item > _local_scalar_dense > memcpy + stream sync
  EXPECT_EQ(a.syncs.time_ns, 30 * us);
  EXPECT_EQ(a.syncs.item_calls, 1);
  EXPECT_DOUBLE_EQ(a.syncs.per_step, 0.5);
  EXPECT_DOUBLE_EQ(a.syncs.pct_of_step, 15.0);
  EXPECT_EQ(a.steps.steps[0].syncs, 0);
  EXPECT_EQ(a.steps.steps[1].syncs, 1);
  ASSERT_EQ(a.syncs.rows.size(), 3u);  // aten::item, cudaStreamSynchronize, Stream Sync
  EXPECT_EQ(a.syncs.rows[0].kind, "aten::item");
  EXPECT_EQ(a.syncs.rows[1].kind, "cudaStreamSynchronize");
  EXPECT_EQ(a.syncs.rows[2].kind, "Stream Sync");
}

TEST_F(Synthetic, MemoryAtStepEnds) {
  EXPECT_TRUE(a.memory.present);
  EXPECT_FALSE(a.memory.relative);
  ASSERT_EQ(a.memory.allocated_at_step_end.size(), 2u);
  EXPECT_EQ(a.memory.allocated_at_step_end[0], 3000);
  EXPECT_EQ(a.memory.allocated_at_step_end[1], 2500);
  EXPECT_DOUBLE_EQ(a.memory.slope_bytes_per_step, -500.0);
  EXPECT_EQ(a.memory.peak_allocated, 3000);  // the 9000 comes after the last step
  EXPECT_EQ(a.memory.peak_reserved, 4000);
  EXPECT_EQ(a.memory.device_total, 32'000'000'000);
}

TEST_F(Synthetic, PrecisionAndShapes) {
  EXPECT_EQ(a.precision.gemm_kernels, 2);
  EXPECT_EQ(a.precision.gemm_time_ns, 55 * us);
  EXPECT_EQ(a.precision.time_by_class_ns.at("fp32"), 30 * us);
  EXPECT_EQ(a.precision.time_by_class_ns.at("bf16"), 25 * us);
  EXPECT_NEAR(a.precision.tensor_core_share_pct, 100.0 * 25 / 55, 1e-9);
  EXPECT_NEAR(a.precision.fp32_share_pct, 100.0 * 30 / 55, 1e-9);
  EXPECT_EQ(a.precision.compute_capability, 80);
  EXPECT_EQ(a.precision.half_gemm_calls, 2);
  EXPECT_EQ(a.precision.misaligned_calls, 1);
  ASSERT_EQ(a.precision.misaligned.size(), 1u);
  EXPECT_EQ(a.precision.misaligned[0].op, "aten::mm");
}

TEST_F(Synthetic, OptimizerAndCommunication) {
  EXPECT_EQ(a.parallel.optimizer, "AdamW");
  EXPECT_EQ(a.parallel.optimizer_impl, "foreach");
  EXPECT_FALSE(a.parallel.data_parallel);
  EXPECT_FALSE(a.parallel.ddp);
  EXPECT_FALSE(a.parallel.compiled);
  EXPECT_EQ(a.parallel.comm_kernels, 1);
  EXPECT_EQ(a.parallel.comm_time_ns, 20 * us);
  EXPECT_DOUBLE_EQ(a.parallel.comm_pct_of_gpu, 25.0);
  EXPECT_DOUBLE_EQ(a.parallel.comm_overlap_pct, 75.0);
  EXPECT_DOUBLE_EQ(a.parallel.comm_pct_of_step, 10.0);
}

TEST_F(Synthetic, StepRangeNarrowsTheWindow) {
  AnalyseOptions opt;
  opt.first_step = 2;
  opt.last_step = 2;
  TraceAnalysis b = analyse(store, opt);
  ASSERT_EQ(b.steps.steps.size(), 1u);
  EXPECT_EQ(b.steps.total_ns, 90 * us);
  EXPECT_EQ(b.kernels.count, 2);
  EXPECT_EQ(b.steps.total.dataloader, 0);
  EXPECT_EQ(b.copies.rows.size(), 1u);
}

// A CPU-only DDP/FSDP rank on gloo: the collective runs on gloo's worker thread
// (gloo:all_reduce, user_annotation) while the step's thread goes on. It is communication only
// where the step's thread is not inside an operator as its innermost event: in a gap, in a scope
// (FSDP2's FSDP::all_gather holds its wait), in an operator that only holds such a scope
// (autograd's evaluate_function running FSDP's backward hook). Where the step's thread computes
// (aten::addmm), the collective is overlapped: CPU exec.
TEST(SyntheticCpu, ACollectiveBesideTheStepThreadIsCommunicationWhereTheStepWaits) {
  StoreBuilder b;
  constexpr int64_t kGloo = 200;
  b.host("ProfilerStep#1", 0, 100, Category::UserAnnotation);
  b.host("aten::addmm", 0, 20);                                       // computes beside [10,20)
  b.host("FSDP::all_gather (1)", 30, 20, Category::UserAnnotation);   // waits [30,50)
  b.host("aten::copy_", 45, 5);                                       //   copy-out [45,50)
  b.host("autograd::engine::evaluate_function: AddBackward0", 60, 30);  // holds [60,90)
  b.host("FSDP::post_backward_reduce (1)", 65, 20, Category::UserAnnotation);  // waits [65,85)
  b.host("gloo:all_reduce", 10, 85, Category::UserAnnotation, kGloo);  // [10,95)
  const TraceAnalysis a = analyse(b.s);
  ASSERT_EQ(a.steps.steps.size(), 1u);
  const Breakdown& t = a.steps.total;
  // [20,30) gap, [30,45) scope, [50,60) gap, [65,85) scope, [90,95) gap: 10+15+10+20+5 = 60;
  // [60,65) and [85,90) are the evaluate_function's own operator time.
  EXPECT_EQ(t.communication, 60 * us);
  EXPECT_EQ(t.cpu_exec, 20 * us + 5 * us + 10 * us);  // addmm, copy_, the evaluate_function's own
  EXPECT_EQ(t.other, 5 * us);                          // [95,100)
  EXPECT_EQ(t.total(), a.steps.total_ns);
  // The same collective on the step's own thread (a synchronous call) is communication throughout.
  StoreBuilder c;
  c.host("ProfilerStep#1", 0, 100, Category::UserAnnotation);
  c.host("aten::addmm", 0, 20);
  c.host("gloo:all_reduce", 10, 30, Category::UserAnnotation);
  const TraceAnalysis on = analyse(c.s);
  EXPECT_EQ(on.steps.total.communication, 30 * us);
}

}  // namespace
}  // namespace ts::analysis
