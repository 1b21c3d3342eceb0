// Every fixture form, read by read_trace, must agree with Python's json module
// (reference_counts.py): events per category, the exact sum of all ts in ns, baseTimeNanoseconds.
#include <gtest/gtest.h>

#include "trace/reader.h"
#include "trace/trace_test_util.h"

namespace ts::trace {
namespace {

using test::data_path;

class EveryFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryFixture, MatchesPythonJsonReference) {
  std::string path = data_path(GetParam());
  ReadOptions with_flows;
  with_flows.keep_flows = true;
  EventStore s = read_trace(path, with_flows);
  auto want = test::reference_for(path);
  auto got = test::summary_of(s);
  EXPECT_EQ(got, want) << path;
  EXPECT_GT(s.size(), 0u);

  // A default read counts the flow events (ph s/t/f) and stores every other row as above.
  EventStore d = read_trace(path);
  size_t flows = 0, j = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.ph[i] == Phase::FlowStart || s.ph[i] == Phase::FlowStep || s.ph[i] == Phase::FlowEnd) {
      ++flows;
      continue;
    }
    ASSERT_LT(j, d.size()) << path;
    ASSERT_EQ(d.name_of(j), s.name_of(i)) << path << " row " << i;
    ASSERT_EQ(d.cat[j], s.cat[i]) << path << " row " << i;
    ASSERT_EQ(d.ts_ns[j], s.ts_ns[i]) << path << " row " << i;
    ASSERT_EQ(d.dur_ns[j], s.dur_ns[i]) << path << " row " << i;
    ASSERT_EQ(d.correlation[j], s.correlation[i]) << path << " row " << i;
    ASSERT_EQ(d.args[j] == kNoArgs, s.args[i] == kNoArgs) << path << " row " << i;
    ++j;
  }
  EXPECT_EQ(j, d.size()) << path;
  EXPECT_EQ(d.meta.flow_events, flows) << path;
  EXPECT_EQ(d.events_read(), s.size()) << path;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, EveryFixture,
    ::testing::Values("hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                      "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                      "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
                      "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                      "hta_trace_filter_sampled_rank-0.json.gz", "hta_triton_example_triton_example.json.gz",
                      "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
                      "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
                      "torch113_bare_array_cpu.json",
                      // Recorded on an H100 with PyTorch 2.11 (scripts/gpu-check; PROVENANCE.md).
                      "gpu/data_starved.pt.trace.json.gz", "gpu/launch_bound.pt.trace.json.gz",
                      "gpu/fp32_on_gpu.pt.trace.json.gz", "gpu/pageable_copies.pt.trace.json.gz",
                      "gpu_torch2/compile_default.pt.trace.json.gz",
                      "gpu_torch2/compile_reduce_overhead.pt.trace.json.gz",
                      "gpu_torch2/compile_aot_eager.pt.trace.json.gz",
                      "gpu_torch2/compile_cudagraphs.pt.trace.json.gz", "gpu_torch2/bf16_autocast.pt.trace.json.gz",
                      "gpu_torch2/fused_adamw.pt.trace.json.gz"));

// Counts read off the files with `zcat F | grep -c` (and reference_counts.py), kept here so a
// change in the reference script cannot silently move both sides.
TEST(TraceForms, Kineto2021ResNetCounts) {
  EventStore s = read_trace(data_path("tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"));
  EXPECT_EQ(s.meta.format, TraceFormat::Kineto2021);
  EXPECT_EQ(s.events_read(), 75718u);  // grep -c '"ph"'
  size_t kernels = 0, memory = 0, runtime = 0, ops = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    kernels += s.cat[i] == Category::Kernel;
    memory += s.cat[i] == Category::Memory;
    runtime += s.cat[i] == Category::CudaRuntime;
    ops += s.cat[i] == Category::CpuOp;
  }
  EXPECT_EQ(kernels, 8772u);   // grep -c '"cat": "Kernel"'
  EXPECT_EQ(memory, 12838u);   // grep -c '\[memory\]'
  EXPECT_EQ(runtime, 11923u);  // grep -c '"cat": "Runtime"'
  EXPECT_EQ(ops, 23646u);      // grep -c '"cat": "Operator"'
  EXPECT_FALSE(s.meta.is_rocm);
  ASSERT_EQ(s.meta.devices.size(), 4u);
  EXPECT_EQ(s.meta.devices[0].name, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(s.meta.devices[0].total_global_mem, 34084028416);
  EXPECT_EQ(s.meta.devices[0].num_sms, 80);
  EXPECT_EQ(s.meta.devices[0].compute_major, 7);
}

TEST(TraceForms, ModernKinetoIsNotMistakenFor2021) {
  EventStore s = read_trace(data_path("hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  EXPECT_EQ(s.meta.format, TraceFormat::Kineto);
  EXPECT_EQ(s.meta.schema_version, 1);
  EXPECT_EQ(s.meta.base_time_ns, 0);
  EXPECT_TRUE(s.meta.distributed.present);
  EXPECT_EQ(s.meta.distributed.rank, 0);
}

TEST(TraceForms, AmdRocmTrace) {
  EventStore s = read_trace(data_path("hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  EXPECT_TRUE(s.meta.is_rocm);
  EXPECT_EQ(s.meta.format, TraceFormat::Kineto);
  // baseTimeNanoseconds is the last key, after traceEvents.
  EXPECT_EQ(s.meta.base_time_ns, 1735632360000000000);
  ASSERT_EQ(s.meta.devices.size(), 4u);
  EXPECT_EQ(s.meta.devices[3].name, "AMD Radeon Graphics");
  EXPECT_EQ(s.meta.devices[3].warp_size, 64);
  EXPECT_EQ(s.meta.devices[3].num_sms, 104);
  EXPECT_TRUE(s.meta.record_shapes);
  EXPECT_NE(test::find_event(s, "hipLaunchKernel", Category::CudaRuntime), SIZE_MAX);
  // Memcpy on AMD says (Host -> Device): no pageable/pinned in the name.
  size_t m = test::find_event(s, "Memcpy HtoD (Host -> Device)", Category::GpuMemcpy);
  ASSERT_NE(m, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[m], 4203669603454206);
  EXPECT_EQ(s.dur_ns[m], 22441);
  EXPECT_EQ(s.pid(m), 2);
  EXPECT_EQ(s.correlation[m], 117);
  EXPECT_EQ(s.external_id[m], 8);
}

TEST(TraceForms, CpuOnlyTraceWithDistributedInfo) {
  EventStore s = read_trace(data_path("hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"));
  EXPECT_TRUE(s.meta.distributed.present);
  EXPECT_EQ(s.meta.distributed.backend, "gloo");
  EXPECT_EQ(s.meta.distributed.rank, 34);
  EXPECT_EQ(s.meta.distributed.world_size, 300);
  EXPECT_TRUE(s.meta.devices.empty());
  EXPECT_EQ(s.meta.base_time_ns, 1719853884000000000);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NE(s.cat[i], Category::Kernel);
}

TEST(TraceForms, TritonTraceVersionsAndDriverLaunch) {
  EventStore s = read_trace(data_path("hta_triton_example_triton_example.json.gz"));
  EXPECT_EQ(s.meta.base_time_ns, 1727743122000000000);
  EXPECT_FALSE(s.meta.cuda_runtime_version.empty());
  EXPECT_FALSE(s.meta.cuda_driver_version.empty());
  size_t k = test::find_event(s, "triton_poi_fused_add_cos_sin_0", Category::Kernel);
  ASSERT_NE(k, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[k], 2413669097444592);
  EXPECT_EQ(s.dur_ns[k], 1760);
  EXPECT_EQ(s.correlation[k], 35);
  EXPECT_NE(test::find_event(s, "cuLaunchKernel", Category::CudaDriver), SIZE_MAX);
}

TEST(TraceForms, BareArrayFromTorch113) {
  EventStore s = read_trace(data_path("torch113_bare_array_cpu.json"));
  EXPECT_EQ(s.meta.format, TraceFormat::BareArray);
  EXPECT_EQ(s.size(), 260u);
  size_t step = test::find_event(s, "ProfilerStep#0", Category::CpuOp);
  ASSERT_NE(step, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[step], 224000);
  EXPECT_EQ(s.dur_ns[step], 1288000);
  ASSERT_TRUE(EventStore::is_named_id(s.pid(step)));
  EXPECT_EQ(s.id_name(s.pid(step)), "CPU functions");
  EXPECT_EQ(s.tid(step), 1);
}

}  // namespace
}  // namespace ts::trace
