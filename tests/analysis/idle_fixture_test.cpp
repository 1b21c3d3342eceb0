// GPU idle attribution on the real traces in tests/data. The by-cause totals, gap counts and the
// largest bucket of each cause are compared with tests/analysis/idle_reference.py, an independent
// Python implementation of the definition (docs/ANALYSES.md); the alexnet numbers below are
// worked out by hand from the trace.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "analysis/trace_analysis.h"
#include "analysis/trace_fixtures.h"
#include "analysis/trace_index.h"
#include "trace/reader.h"
#include "util/json_writer.h"

namespace ts::analysis {
namespace {

const char* kGpuFixtures[] = {
    "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
    kAlexnet,
    "hta_triton_example_triton_example.json.gz",
    "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta_nccl_parser_config_nccl_data.json.gz",
    "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    kSampled,
};

std::string attribution_json(const TraceAnalysis& a) {
  const auto& ia = a.gpu.attribution;
  JsonWriter w;
  w.begin_object();
  w.field("present", ia.present);
  w.field("idle_ns", ia.idle_ns);
  w.field("gaps", ia.gaps);
  w.key("by_cause_ns").begin_object();
  for (int c = 0; c < kIdleCauses; ++c) w.field(idle_cause_name(static_cast<IdleCause>(c)), ia.by_cause_ns[c]);
  w.end_object();
  w.key("top").begin_object();
  for (int c = 0; c < kIdleCauses; ++c) {
    // The largest bucket of the cause ("(N other host events)" is a fold); ties broken like the
    // script: by (host_event, op, annotation, frame).
    const IdleEntry* top = nullptr;
    for (const auto& e : ia.entries)
      if (e.cause == static_cast<IdleCause>(c) && !e.host_event.starts_with("(") &&
          (!top || e.ns > top->ns ||
           (e.ns == top->ns && std::tie(e.host_event, e.op, e.annotation, e.frame) <
                                   std::tie(top->host_event, top->op, top->annotation, top->frame))))
        top = &e;
    if (!top) continue;
    w.key(idle_cause_name(top->cause)).begin_object();
    w.field("host_event", top->host_event).field("op", top->op).field("annotation", top->annotation).field("ns", top->ns);
    w.end_object();
  }
  w.end_object();
  w.end_object();
  return w.str();
}

TEST(IdleAttributionFixtures, MatchesReferenceScript) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_FAIL() << "no /usr/bin/python3";
  const std::string script = std::string(TS_SOURCE_DIR) + "/tests/analysis/idle_reference.py";
  for (const char* name : kGpuFixtures) {
    SCOPED_TRACE(name);
    const std::string tmp = ::testing::TempDir() + "/idle_ref_" + std::to_string(::getpid()) + ".json";
    std::ofstream(tmp) << attribution_json(analyse_fixture(name));
    const std::string cmd = "cd '" + std::string(TS_SOURCE_DIR) + "/tests/analysis' && /usr/bin/python3 '" + script +
                            "' --check '" + tmp + "' '" + fixture(name) + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    EXPECT_EQ(rc, 0) << cmd;
  }
}

// Our figures for hta_check.py, in µs (the unit of HTA's figures).
std::string hta_side_json(const TraceAnalysis& a) {
  const auto& g = a.gpu;
  int64_t gpu_side = 0;  // idle charged to queued GPU work rather than to the host
  for (const auto& e : g.attribution.entries)
    if (e.cause == IdleCause::GpuOverhead || e.cause == IdleCause::StreamWait || e.cause == IdleCause::Untraced ||
        (e.cause == IdleCause::Unattributed && e.host_event.starts_with("queued")) ||
        (e.cause == IdleCause::Collective && is_comm_kernel_name(e.host_event)))
      gpu_side += e.ns;
  JsonWriter w;
  w.begin_object();
  w.field("gpu_present", g.present);
  w.field("span_us", g.span_ns / 1000).field("idle_us", g.idle_ns / 1000).field("compute_us", g.compute_ns / 1000);
  w.field("idle_host_wait_us", g.idle_host_wait_ns / 1000);
  w.field("idle_kernel_wait_us", g.idle_kernel_wait_ns / 1000);
  w.field("idle_other_us", g.idle_other_ns / 1000);
  w.field("gaps", g.attribution.gaps);
  w.field("gpu_side_us", gpu_side / 1000);
  w.end_object();
  return w.str();
}

// The external check (issue 12 item 6): HTA's own figures for each fixture
// (tests/analysis/hta_reference/, HTA 0.6.1) against ours, equal where the definitions are the
// same, off by the documented amount where they differ on purpose (docs/ANALYSES.md).
TEST(IdleAttributionFixtures, AgreesWithHta) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_FAIL() << "no /usr/bin/python3";
  const std::string dir = std::string(TS_SOURCE_DIR) + "/tests/analysis/";
  std::vector<std::string> names(std::begin(kGpuFixtures), std::end(kGpuFixtures));
  names.push_back("hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string tmp = ::testing::TempDir() + "/hta_side_" + std::to_string(::getpid()) + ".json";
    std::ofstream(tmp) << hta_side_json(analyse_fixture(name.c_str()));
    const std::string cmd = "/usr/bin/python3 '" + dir + "hta_check.py' '" + tmp + "' '" + dir + "hta_reference/" +
                            name + ".hta.json'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    EXPECT_EQ(rc, 0) << cmd;
  }
}

// Every idle ns in exactly one bucket, and at least 90% of it explained (not "unattributed") on
// every fixture with GPU idle time. The sampled trace keeps ~0.5% of its runtime calls (1,204
// correlation ids over a span of 259,691), so most of its kernels are missing: 245 ms of its
// gaps sit on stream 7 between two recorded kernels, the second launched a median 12.8 ms before
// the gap: GPU work the trace lacks ("untraced", docs/ANALYSES.md 3b), not "nothing recorded".
TEST(IdleAttributionFixtures, EveryIdleNanosecondInOneBucket) {
  for (const char* name : kGpuFixtures) {
    SCOPED_TRACE(name);
    const TraceAnalysis a = analyse_fixture(name);
    const auto& ia = a.gpu.attribution;
    ASSERT_TRUE(ia.present);
    int64_t entries = 0, causes = 0, pieces = 0, last = INT64_MIN;
    for (const auto& e : ia.entries) entries += e.ns;
    for (int64_t v : ia.by_cause_ns) causes += v;
    for (const auto& p : ia.pieces) {
      ASSERT_GE(p.begin, last);
      ASSERT_LT(p.entry, ia.entries.size());
      pieces += p.end - p.begin;
      last = p.end;
    }
    EXPECT_EQ(entries, a.gpu.idle_ns);
    EXPECT_EQ(causes, a.gpu.idle_ns);
    EXPECT_EQ(pieces, a.gpu.idle_ns);
    EXPECT_LE(ia.entries.size(), 40u + 2 * kIdleCauses);  // + each cause's largest, the rest folded per cause
    // Only the sampled trace warns that its idle time is mostly work the trace lacks.
    bool warned = false;
    for (const auto& w : a.warnings) warned |= w.find("the trace lacks the GPU work") != std::string::npos;
    EXPECT_EQ(warned, std::string(name) == kSampled);
    if (a.gpu.idle_ns == 0) continue;
    EXPECT_LE(ia.unattributed_ns, a.gpu.idle_ns / 10) << "unattributed " << ia.unattributed_ns << " of " << a.gpu.idle_ns;
  }
}

// The sampled trace: 245,248 µs of its gaps are queued behind their own stream's last kernel
// (347 gaps on stream 7, one on stream 23), counted independently of idle_reference.py by a
// throwaway script that walked the gaps (kernel at b launched before a, its stream's latest end
// == a, gap >= 30 µs, not an NCCL kernel); what stays unattributed is under 1% of the idle time.
TEST(IdleAttributionFixtures, SampledTraceGapsAreUntracedWork) {
  const TraceAnalysis a = analyse_fixture(kSampled);
  const auto& ia = a.gpu.attribution;
  EXPECT_EQ(ia.cause_ns(IdleCause::Untraced), 245'248 * us);
  EXPECT_LT(ia.unattributed_ns, a.gpu.idle_ns / 100);
}

// alexnet (A100, cuDNN warm-up): the window is one synthetic step; GPU events span
// [1695835572943613, 1695835585863857) µs with 95 gaps (12,854,103 µs idle, as HTA's raw check).
// The first aten::cudnn_convolution call lasts 10,840,892 µs; its 9 later calls average
// 1,077,555 / 9 = 119,728 µs, so the first is a slow first call (>= 10x, >= 1 ms): set-up. The
// three cudaFree calls inside it (6,008,692 + 525,034 + 2 µs, each wholly inside an idle gap)
// are the largest set-up bucket: 6,533,728 µs. The second convolution's two cudaMalloc calls
// (277,144 + 764,486 = 1,041,630 µs, inside the gap [1695835584707715, 1695835585751556)) are
// memory, not set-up: that call is not a first call of its name.
TEST(IdleAttributionFixtures, AlexnetWarmUpIsCudnnSetUp) {
  const TraceAnalysis a = analyse_fixture(kAlexnet);
  const auto& ia = a.gpu.attribution;
  EXPECT_EQ(a.gpu.idle_ns, 12'854'103 * us);
  EXPECT_EQ(ia.gaps, 95);
  ASSERT_FALSE(ia.entries.empty());
  const IdleEntry& top = ia.entries.front();
  EXPECT_EQ(top.cause, IdleCause::Setup);
  EXPECT_EQ(top.host_event, "cudaFree");
  EXPECT_EQ(top.op, "aten::conv2d");
  EXPECT_EQ(top.ns, 6'533'728 * us);
  const IdleEntry* malloc = nullptr;
  for (const auto& e : ia.entries)
    if (e.cause == IdleCause::Memory && e.host_event == "cudaMalloc" && e.op == "aten::conv2d" &&
        e.annotation.ends_with("warmup|forward]"))
      malloc = &e;
  ASSERT_NE(malloc, nullptr);
  EXPECT_EQ(malloc->ns, 1'041'630 * us);
  // Set-up is most of the idle time: >= the first convolution's cudaFree calls and more.
  EXPECT_GT(ia.cause_ns(IdleCause::Setup), a.gpu.idle_ns * 8 / 10);
}

}  // namespace
}  // namespace ts::analysis
