// Bound-by per step and collectives on the real traces in tests/data. Expected numbers come from
// tests/analysis/bound_collectives_reference.py, an independent Python implementation of the same
// definitions (`/usr/bin/python3 tests/analysis/bound_collectives_reference.py tests/data/<file>`);
// MatchesReferenceScript re-runs it on every fixture and compares every value. HTA's own figures
// for the same traces (tests/analysis/hta_reference/, docs/ANALYSES.md) are checked where analogous.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "analysis/trace_analysis.h"
#include "analysis/trace_fixtures.h"
#include "trace/reader.h"
#include "util/json_writer.h"

namespace ts::analysis {
namespace {

const char* kAll[] = {"hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                      "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                      kAlexnet,
                      kNccl,
                      kNsResolution,
                      kSampled,
                      "hta_triton_example_triton_example.json.gz",
                      kResnet0,
                      "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
                      "torch113_bare_array_cpu.json"};

double pct(const TraceAnalysis& a, int c) { return 100.0 * a.bound.total_ns[c] / a.steps.total_ns; }

// The shape bound_collectives_reference.py prints, for its --check mode.
std::string reference_shape(const TraceAnalysis& a) {
  JsonWriter w(false);
  w.begin_object();
  w.key("bound");
  if (!a.bound.present) {
    w.null();
  } else {
    w.begin_object().key("steps").begin_array();
    for (const Step& st : a.steps.steps) {
      w.begin_object().field("number", st.number).field("label", kBoundClassNames[st.bound_by]).key("ns").begin_object();
      for (int c = 0; c < kBoundClasses; ++c) w.field(kBoundClassNames[c], st.bound_ns[c]);
      w.end_object().end_object();
    }
    w.end_array().key("total_ns").begin_object();
    for (int c = 0; c < kBoundClasses; ++c) w.field(kBoundClassNames[c], a.bound.total_ns[c]);
    w.end_object().field("bound_by", kBoundClassNames[a.bound.bound_by]).end_object();
  }
  w.key("collectives");
  if (a.collectives.count == 0) {
    w.null();
  } else {
    w.begin_object().key("rows").begin_object();
    for (const CollectiveRow& r : a.collectives.rows) {
      w.key(r.name + "/" + r.dtype + "/" + std::to_string(r.group_size)).begin_object();
      w.field("count", r.count).key("bytes");
      if (r.bytes >= 0) w.value(r.bytes); else w.null();
      w.field("time_ns", r.time_ns).field("exposed_ns", r.exposed_ns).end_object();
    }
    w.end_object().field("count", a.collectives.count).field("exposed_ns", a.collectives.exposed_ns).end_object();
  }
  w.end_object();
  return w.take();
}

TEST(BoundCollectivesFixtures, MatchesReferenceScript) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_FAIL() << "no /usr/bin/python3";
  const std::string script = std::string(TS_SOURCE_DIR) + "/tests/analysis/bound_collectives_reference.py";
  for (const char* name : kAll) {
    if (!std::filesystem::exists(fixture(name))) continue;
    SCOPED_TRACE(name);
    const std::string tmp = ::testing::TempDir() + "/bound_ref_" + std::to_string(::getpid()) + ".json";
    std::ofstream(tmp) << reference_shape(analyse_fixture(name));
    const std::string cmd = "/usr/bin/python3 '" + script + "' --check '" + tmp + "' '" + fixture(name) + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    EXPECT_EQ(rc, 0) << cmd;
  }
}

// DDP rank 0 of 2 (NCCL): the host is the bottleneck; HTA's critical path for ProfilerStep#5
// says cpu_bound 100%.
TEST(BoundCollectivesFixtures, NcclStepsAreCpuBound) {
  const TraceAnalysis a = analyse_fixture(kNccl);
  ASSERT_EQ(a.steps.steps.size(), 3u);
  for (const Step& st : a.steps.steps) EXPECT_EQ(st.bound_by, kBoundCpu) << st.number;
  EXPECT_EQ(a.bound.bound_by, kBoundCpu);
  // Reference script: cpu 478,438,956 ns of 667,105,339 ns of steps (71.7%).
  EXPECT_EQ(a.bound.total_ns[kBoundCpu], 478'438'956);
  EXPECT_EQ(a.bound.total_ns[kBoundGpuCompute], 118'309'345);
  EXPECT_EQ(a.bound.total_ns[kBoundCommunication], 39'190'669);
  EXPECT_EQ(a.bound.total_ns[kBoundLaunch], 29'166'235);
  EXPECT_EQ(a.bound.total_ns[kBoundKernelKernel], 2'000'134);
  EXPECT_EQ(a.bound.steps_by_label[kBoundCpu], 3);
}

// Single-GPU ResNet-like trace that keeps its GPU busy: HTA's critical path (ProfilerStep#102)
// is gpu_compute_bound 97.87%, kernel-kernel overhead 2.13%.
TEST(BoundCollectivesFixtures, NsResolutionIsGpuComputeBoundLikeHta) {
  const TraceAnalysis a = analyse_fixture(kNsResolution);
  ASSERT_EQ(a.steps.steps.size(), 5u);
  for (const Step& st : a.steps.steps) EXPECT_EQ(st.bound_by, kBoundGpuCompute) << st.number;
  EXPECT_EQ(a.bound.total_ns[kBoundGpuCompute], 472'454'441);
  EXPECT_NEAR(pct(a, kBoundGpuCompute), 97.87, 0.5);  // ours 97.71%
  EXPECT_NEAR(pct(a, kBoundKernelKernel), 2.13, 1.0);  // ours 1.29%
}

// The data-starved ResNet-50: a third of every step is the GPU waiting while the host loads data.
TEST(BoundCollectivesFixtures, Resnet0SpendsAThirdInDataLoading) {
  const TraceAnalysis a = analyse_fixture(kResnet0);
  EXPECT_EQ(a.bound.total_ns[kBoundDataLoading], 352'401'000);
  EXPECT_NEAR(pct(a, kBoundDataLoading), 33.07, 0.01);  // 352.401 / 1065.553 ms
  EXPECT_EQ(a.bound.bound_by, kBoundGpuCompute);        // 603.558 ms, 56.6%
}

// alexnet: start-up, the host holds the GPU back (HTA: cpu_bound 89.42% on the forward pass).
TEST(BoundCollectivesFixtures, AlexnetIsCpuBound) {
  const TraceAnalysis a = analyse_fixture(kAlexnet);
  EXPECT_EQ(a.bound.bound_by, kBoundCpu);
  EXPECT_GT(pct(a, kBoundCpu), 89.42 - 5);  // ours 92.8% over the whole trace
}

// Collectives from the kernels' own args (PyTorch 2.x writes them on the NCCL kernel).
TEST(BoundCollectivesFixtures, NcclAllReduceBandwidthAndExposure) {
  const TraceAnalysis a = analyse_fixture(kNccl);
  const CollectiveStats& c = a.collectives;
  EXPECT_EQ(c.count, 21);
  EXPECT_EQ(c.with_params, 21);
  ASSERT_EQ(c.rows.size(), 3u);
  const CollectiveRow& ar = c.rows[0];
  EXPECT_EQ(ar.name, "allreduce");
  EXPECT_EQ(ar.dtype, "Float");
  EXPECT_EQ(ar.group_size, 2);
  EXPECT_EQ(ar.count, 15);
  EXPECT_EQ(ar.bytes, 306'684'384);  // 3 steps x (2,049,000 + 7,875,584 + 6,563,840 + 6,637,568 + 2,431,040) x 4
  EXPECT_EQ(ar.time_ns, 46'762'159);
  EXPECT_EQ(ar.exposed_ns, 39'076'335);
  EXPECT_NEAR(ar.algbw_gbps, 306'684'384.0 / 46'762'159, 1e-9);  // 6.558 GB/s
  EXPECT_NEAR(ar.busbw_gbps, ar.algbw_gbps, 1e-9);                // 2(n-1)/n = 1 for n = 2
  EXPECT_EQ(c.exposed_ns, a.bound.total_ns[kBoundCommunication]);
  // HTA's communication/computation overlap is 14.31% (computation kernels only); ours counts
  // copies and memsets as overlapping work too: 1 - exposed / time.
  const double overlapped_pct = 100.0 * (1.0 - static_cast<double>(c.exposed_ns) / c.time_ns);
  EXPECT_NEAR(overlapped_pct, 14.31, 3.0);
}

// No parameters recorded (record_param_comms without args): the name comes from the kernel,
// the group size from distributedInfo, the bytes stay unknown.
TEST(BoundCollectivesFixtures, SampledTraceNamesSendRecvFromTheKernel) {
  const TraceAnalysis a = analyse_fixture(kSampled);
  const CollectiveStats& c = a.collectives;
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].name, "sendrecv");
  EXPECT_EQ(c.rows[0].group_size, 128);
  EXPECT_EQ(c.rows[0].bytes, -1);
  EXPECT_EQ(c.rows[0].algbw_gbps, 0);
  EXPECT_EQ(c.with_params, 0);
  EXPECT_EQ(c.count, 10);
}

}  // namespace
}  // namespace ts::analysis

namespace ts::analysis {
namespace {

// Two ranks of one job from the NCCL fixture (rank 0 of 2): rank 1 is the same trace with
// distributedInfo.rank = 1 and every NCCL kernel longer than 200 µs made 100 µs shorter, as if
// rank 1 reached each all-reduce 100 µs after rank 0 (the other ranks wait inside the kernel; the
// last one does not). Made by Python at test time from the real file.
TEST(BoundCollectivesFixtures, LastArrivalAcrossTwoRanks) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_FAIL() << "no /usr/bin/python3";
  const std::filesystem::path dir = ::testing::TempDir() + "/arrival_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string rank1 = (dir / "rank1.json").string();
  const std::string py =
      "import gzip,json,sys\n"
      "d=json.load(gzip.open(sys.argv[1]))\n"
      "d['distributedInfo']['rank']=1\n"
      "for e in d['traceEvents']:\n"
      "  if e.get('cat')=='kernel' and e.get('name','').startswith('ncclKernel') and e['dur']>200:\n"
      "    e['dur']=round(e['dur']-100,3)\n"
      "json.dump(d,open(sys.argv[2],'w'))\n";
  std::ofstream(dir / "make_rank1.py") << py;
  const std::string cmd = "/usr/bin/python3 '" + (dir / "make_rank1.py").string() + "' '" + fixture(kNccl) + "' '" + rank1 + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const MultiTraceAnalysis m = analyse_traces({fixture(kNccl), rank1}, {}, 1);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(m.one_job) << m.job_basis;
  // 21 NCCL kernels per rank, same steps and order: all matched. The 15 all-reduces (2.1-6.0 ms)
  // are 100 µs shorter on rank 1, so rank 1 is last in each; the 6 broadcasts (8-31 µs) are
  // equal on both ranks: ties, nobody last.
  EXPECT_EQ(m.arrival.matched_calls, 21);
  EXPECT_EQ(m.arrival.last_rank, 1);
  EXPECT_EQ(m.arrival.last_count, 15);
  // Rank 0 waits 100 µs in each of the 15: 1.5 ms over 3 steps = 500 µs per step.
  EXPECT_NEAR(m.arrival.others_wait_ns_per_step, 500'000, 1);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].last_arrivals, 0);
  EXPECT_EQ(m.ranks[1].last_arrivals, 15);
  EXPECT_NEAR(m.ranks[0].collective_wait_ns_per_step, 500'000, 1);
  EXPECT_EQ(m.ranks[1].collective_wait_ns_per_step, 0);
}

}  // namespace
}  // namespace ts::analysis
