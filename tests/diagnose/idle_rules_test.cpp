// The rules driven by the GPU idle attribution (warm-up, gpu-idle, host-sync, launch-bound's
// deep-queue guard) on real traces from tests/data and on hand-built evidence.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/trace_analysis.h"
#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"
#include "diagnose/trace_evidence.h"
#include "trace/reader.h"

namespace ts::diagnose {
namespace {

using analysis::IdleCause;
using test::ev_value;
using test::find;

using test::trace_evidence;

// alexnet (A100): idle attribution charges 11,665 ms of the 12,920 ms GPU span (90%) to
// one-time set-up (tests/analysis/idle_fixture_test.cpp works the numbers): >= 50% -> high;
// it leads, and the verdict says the trace shows start-up and names the largest set-up call.
TEST(IdleRules, AlexnetIsWarmUp) {
  const Evidence ev = trace_evidence("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz");
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "warm-up");
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->severity, Severity::Medium);
  EXPECT_EQ(f->severity, Severity::High);
  EXPECT_NEAR(ev_value(*f, "setup_pct_of_gpu_span"), 100.0 * 11'665'427 / 12'920'244, 0.01);
  EXPECT_NE(f->title.find("cudaFree"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("aten::conv2d"), std::string::npos) << f->title;
  EXPECT_EQ(d.findings.front().id, "warm-up");
  EXPECT_EQ(d.verdict.find("This trace shows start-up"), 0u) << d.verdict;
  EXPECT_EQ(d.verdict.find("No large bottleneck"), std::string::npos);
  EXPECT_EQ(find(d, "gpu-idle"), nullptr);  // set-up is warm-up's to explain
}

// The sampled trace_filter trace: median launch delay 10.8 ms (a deep queue), so launch-bound
// stays silent; the GPU idles 55% and the largest explained cause (host code) gets gpu-idle.
// nccl_parser_config: median launch delay 1.8 µs (shallow): launch-bound (host-bound) fires.
TEST(IdleRules, LaunchBoundOnlyWithAShallowQueue) {
  const Evidence sampled = trace_evidence("hta_trace_filter_sampled_rank-0.json.gz");
  EXPECT_GT(sampled.trace->kernels.launch.median_launch_delay_ns, 100'000);
  const Diagnosis ds = diagnose(sampled);
  EXPECT_EQ(find(ds, "launch-bound"), nullptr);
  const Finding* idle = find(ds, "gpu-idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_GE(idle->severity, Severity::Medium);
  EXPECT_NE(idle->title.find("host_compute"), std::string::npos) << idle->title;
  const int64_t hc = sampled.trace->gpu.attribution.cause_ns(IdleCause::HostCompute);
  EXPECT_NEAR(idle->recoverable_fraction, double(hc) / sampled.trace->steps.total_ns, 1e-12);

  const Evidence nccl = trace_evidence("hta_nccl_parser_config_nccl_data.json.gz");
  EXPECT_LT(nccl.trace->kernels.launch.median_launch_delay_ns, 100'000);
  const Diagnosis dn = diagnose(nccl);  // held: find() points into it
  const Finding* lb = find(dn, "launch-bound");
  ASSERT_NE(lb, nullptr);
  // Gain: the idle the attribution charges to launches and host code between them.
  const auto& a = nccl.trace->gpu.attribution;
  EXPECT_NEAR(lb->recoverable_fraction,
              double(a.cause_ns(IdleCause::Launch) + a.cause_ns(IdleCause::HostCompute)) / nccl.trace->steps.total_ns,
              1e-12);
}

// Hand-built: 10 steps of 100 ms; the attribution charges 40 ms per step to one blocking call
// (aten::to > cudaMemcpyAsync, pageable copy, inside "compute_metrics", 10 gaps) and 2 ms per
// step to host code. host-sync names the call and gains 400 / 1000 = 40%.
TEST(IdleRules, HostSyncFromTheAttribution) {
  Evidence ev;
  auto t = test::trace_with_steps(10, 100, 0, 58);
  auto& ia = t.gpu.attribution;
  ia.present = true;
  ia.idle_ns = t.gpu.idle_ns;  // 420 ms
  analysis::IdleEntry sync;
  sync.cause = IdleCause::Sync;
  sync.host_event = "cudaMemcpyAsync";
  sync.op = "aten::to";
  sync.annotation = "compute_metrics";
  sync.ns = 400'000'000;
  sync.gaps = 10;
  analysis::IdleEntry host;
  host.cause = IdleCause::HostCompute;
  host.host_event = "aten::add";
  host.ns = 20'000'000;
  host.gaps = 10;
  ia.entries = {sync, host};
  ia.by_cause_ns[static_cast<int>(IdleCause::Sync)] = sync.ns;
  ia.by_cause_ns[static_cast<int>(IdleCause::HostCompute)] = host.ns;
  ev.trace = t;
  const Finding* f = nullptr;
  Diagnosis d = diagnose(ev);
  ASSERT_NE(f = find(d, "host-sync"), nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.4, 1e-12);
  EXPECT_NEAR(ev_value(*f, "sync_idle_ms_per_step"), 40, 1e-9);
  EXPECT_NEAR(ev_value(*f, "drains_per_step"), 1, 1e-9);
  EXPECT_NE(f->title.find("cudaMemcpyAsync in aten::to (compute_metrics)"), std::string::npos) << f->title;
  // A copy drains: the op does not say which way, so the fix names both (a value read back:
  // keep it on the GPU; a batch sent: pinned memory, non_blocking) and verify applies neither.
  EXPECT_EQ(f->title.find("A blocking copy drains"), 0u) << f->title;
  EXPECT_NE(f->fix.find(".cpu()"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("pin_memory=True"), std::string::npos) << f->fix;
  EXPECT_TRUE(f->fix_settings.empty());
  // GPU idle 42% of the span: below gpu-idle's 50%.
  EXPECT_EQ(find(d, "gpu-idle"), nullptr);
  // The same drain from .item(): its scalar comes back by cudaMemcpyAsync too, but under
  // aten::item it is a read of a value, fixed like .item().
  ev.trace->gpu.attribution.entries[0].op = "aten::item";
  d = diagnose(ev);
  ASSERT_NE(f = find(d, "host-sync"), nullptr);
  EXPECT_EQ(f->title.find("A blocking call drains"), 0u) << f->title;
  EXPECT_NE(f->fix.find(".item()"), std::string::npos) << f->fix;
  EXPECT_TRUE(f->fix_settings.empty());
  // Once every other step: not a per-step drain, silent.
  ev.trace->gpu.attribution.entries[0].gaps = 5;
  EXPECT_EQ(find(diagnose(ev), "host-sync"), nullptr);
}

// Hand-built, GPU idle 90% of the span: memory management is the largest cause (no rule of its
// own): gpu-idle names it with gain = its idle / step time; when only "nothing recorded" is
// left, it says so and claims no gain.
TEST(IdleRules, GpuIdleNamesTheLargestExplainedCause) {
  Evidence ev;
  auto t = test::trace_with_steps(4, 100, 0, 10);  // idle 360 of 400 ms
  auto& ia = t.gpu.attribution;
  ia.present = true;
  ia.idle_ns = t.gpu.idle_ns;
  analysis::IdleEntry mem;
  mem.cause = IdleCause::Memory;
  mem.host_event = "cudaMalloc";
  mem.op = "aten::empty";
  mem.ns = 200'000'000;
  mem.pct_of_idle = 100.0 * 200 / 360;
  analysis::IdleEntry none;
  none.cause = IdleCause::Unattributed;
  none.host_event = "nothing recorded on the launching thread";
  none.ns = 160'000'000;
  ia.entries = {mem, none};
  ia.by_cause_ns[static_cast<int>(IdleCause::Memory)] = mem.ns;
  ia.by_cause_ns[static_cast<int>(IdleCause::Unattributed)] = none.ns;
  ia.unattributed_ns = none.ns;
  ev.trace = t;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "gpu-idle");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.5, 1e-12);  // 200 / 400 ms
  EXPECT_EQ(f->bottleneck, Bottleneck::Memory);
  EXPECT_NE(f->explanation.find("cudaMalloc in aten::empty"), std::string::npos);
  ev.trace->gpu.attribution.by_cause_ns[static_cast<int>(IdleCause::Memory)] = 0;
  ev.trace->gpu.attribution.entries.erase(ev.trace->gpu.attribution.entries.begin());
  d = diagnose(ev);
  ASSERT_NE(f = find(d, "gpu-idle"), nullptr);
  EXPECT_EQ(f->recoverable_fraction, 0);
  EXPECT_NE(f->title.find("nothing recorded"), std::string::npos);
  EXPECT_EQ(d.verdict.find("No large bottleneck"), std::string::npos) << d.verdict;
  // GPU work the trace lacks ("untraced") is no host work to fix either: with 250 ms of it and
  // 110 ms of memory management, gpu-idle names memory, gain 110 / 400 ms = 0.275.
  auto& ia2 = ev.trace->gpu.attribution;
  analysis::IdleEntry untraced;
  untraced.cause = IdleCause::Untraced;
  untraced.host_event = "queued behind its stream's last event";
  untraced.ns = 250'000'000;
  mem.ns = 110'000'000;
  ia2.entries = {untraced, mem};
  std::fill(std::begin(ia2.by_cause_ns), std::end(ia2.by_cause_ns), 0);
  ia2.by_cause_ns[static_cast<int>(IdleCause::Untraced)] = untraced.ns;
  ia2.by_cause_ns[static_cast<int>(IdleCause::Memory)] = mem.ns;
  ia2.unattributed_ns = 0;
  d = diagnose(ev);
  ASSERT_NE(f = find(d, "gpu-idle"), nullptr);
  EXPECT_EQ(f->bottleneck, Bottleneck::Memory);
  EXPECT_NEAR(f->recoverable_fraction, 0.275, 1e-12);
}

}  // namespace
}  // namespace ts::diagnose
