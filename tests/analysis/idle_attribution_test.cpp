// GPU idle attribution (analysis/idle_attribution.cpp) on small hand-made traces whose
// expected buckets are worked out by hand from the timelines drawn in each test (times in µs).
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/one_gap_per_cause.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;
int64_t cause(const TraceAnalysis& a, IdleCause c) { return a.gpu.attribution.cause_ns(c); }

const IdleEntry* entry(const TraceAnalysis& a, IdleCause c, const std::string& host, const std::string& op = "*") {
  for (const auto& e : a.gpu.attribution.entries)
    if (e.cause == c && e.host_event == host && (op == "*" || e.op == op)) return &e;
  return nullptr;
}

// The invariants every attribution keeps: buckets and pieces both sum to gpu.idle_ns, pieces
// are sorted, disjoint, and point at real entries.
void expect_consistent(const TraceAnalysis& a) {
  const auto& ia = a.gpu.attribution;
  int64_t sum = 0, by_cause = 0, pieces = 0, last_end = INT64_MIN;
  for (const auto& e : ia.entries) sum += e.ns;
  for (int64_t v : ia.by_cause_ns) by_cause += v;
  for (const auto& p : ia.pieces) {
    EXPECT_GE(p.begin, last_end);
    EXPECT_LT(p.begin, p.end);
    ASSERT_LT(p.entry, ia.entries.size());
    pieces += p.end - p.begin;
    last_end = p.end;
  }
  EXPECT_EQ(sum, a.gpu.idle_ns);
  EXPECT_EQ(by_cause, a.gpu.idle_ns);
  EXPECT_EQ(pieces, a.gpu.idle_ns);
  EXPECT_EQ(ia.idle_ns, a.gpu.idle_ns);
  EXPECT_EQ(ia.unattributed_ns, ia.cause_ns(IdleCause::Unattributed));
}

// The timeline and its hand-worked buckets: one_gap_per_cause.h.
TEST(IdleAttribution, OneGapPerCause) {
  StoreBuilder b;
  testing::add_one_gap_per_cause(b);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.gpu.idle_ns, 525 * us);
  EXPECT_EQ(a.gpu.attribution.gaps, 5);
  EXPECT_EQ(cause(a, IdleCause::DataLoading), 150 * us);
  EXPECT_EQ(cause(a, IdleCause::HostCompute), 40 * us);
  EXPECT_EQ(cause(a, IdleCause::Launch), (10 + 20) * us);
  EXPECT_EQ(cause(a, IdleCause::Sync), 200 * us);
  EXPECT_EQ(cause(a, IdleCause::GpuOverhead), 5 * us);
  EXPECT_EQ(cause(a, IdleCause::Unattributed), 100 * us);
  const IdleEntry* drain = entry(a, IdleCause::Sync, "cudaStreamSynchronize", "aten::item");
  ASSERT_NE(drain, nullptr);
  EXPECT_EQ(drain->ns, 190 * us);
  EXPECT_EQ(drain->gaps, 1);
  ASSERT_NE(entry(a, IdleCause::Sync, "aten::item"), nullptr);
  EXPECT_EQ(entry(a, IdleCause::Sync, "aten::item")->ns, 10 * us);
  const IdleEntry* launch = entry(a, IdleCause::Launch, "cudaLaunchKernel", "aten::relu");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->ns, 20 * us);
  // Largest first; percentages of idle and of the 1000 µs step.
  EXPECT_EQ(a.gpu.attribution.entries.front().ns, 190 * us);
  EXPECT_NEAR(a.gpu.attribution.entries.front().pct_of_idle, 100.0 * 190 / 525, 1e-9);
  EXPECT_NEAR(a.gpu.attribution.entries.front().pct_of_step, 19.0, 1e-9);
}

// Work queued behind its own stream's last kernel that still starts late: an in-order stream runs
// it as soon as that kernel ends, and no other stream ran, so the GPU ran work the trace lacks.
//   cudaLaunchKernel [10,12) c1 -> k1 stream 7 [20,100); [14,16) c2 -> k2 stream 7 [300,400);
//   [18,20) c3 -> k3 stream 8 [500,600). Nothing else on the host but the step.
//   gap [100,300): k2 queued at 16, its stream's last event k1 ended at 100 -> untraced 200;
//   gap [400,500): k3 queued at 20, stream 8 had no event before -> unattributed 100 ("queued").
// idle = span [20,600) 580 - busy 280 = 300.
TEST(IdleAttribution, QueuedBehindItsOwnStreamIsUntracedWork) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 10, 2, 1);
  b.kernel("k1", 20, 80, 1, 7);
  b.runtime("cudaLaunchKernel", 14, 2, 2);
  b.kernel("k2", 300, 100, 2, 7);
  b.runtime("cudaLaunchKernel", 18, 2, 3);
  b.kernel("k3", 500, 100, 3, 8);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.gpu.idle_ns, 300 * us);
  EXPECT_EQ(a.gpu.attribution.gaps, 2);
  EXPECT_EQ(cause(a, IdleCause::Untraced), 200 * us);
  EXPECT_EQ(cause(a, IdleCause::Unattributed), 100 * us);
  ASSERT_FALSE(a.gpu.attribution.entries.empty());
  EXPECT_TRUE(a.gpu.attribution.entries.front().host_event.starts_with("queued behind its stream's last event"));
  EXPECT_EQ(a.gpu.attribution.entries.front().gaps, 1);
}

// Two launching threads (main and autograd): where the thread that launched the next kernel has
// nothing open, the other launching thread's activity explains the gap.
//   main (tid 100): ProfilerStep#1 [0,1000), cudaLaunchKernel [10,15) c1 -> k1 [20,100),
//                   aten::cross_entropy [100,250)
//   autograd (tid 200): MulBackward0 [300,396) > cudaLaunchKernel [390,395) c2 -> k2 [400,500)
// Gap [100,400), swept on tid 200: [100,300) nothing there -> tid 100: cross_entropy 150, then
// only the step range open: "Python between ops" 50; [300,390) MulBackward0 90; launch 5 + 5.
TEST(IdleAttribution, SeveralLaunchingThreads) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 10, 5, 1);
  b.kernel("k1", 20, 80, 1);
  b.host("aten::cross_entropy", 100, 150);
  b.host("autograd::engine::evaluate_function: MulBackward0", 300, 96, Category::CpuOp, 200);
  b.runtime("cudaLaunchKernel", 390, 5, 2, 200);
  b.kernel("k2", 400, 100, 2);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.gpu.idle_ns, 300 * us);
  ASSERT_NE(entry(a, IdleCause::HostCompute, "aten::cross_entropy"), nullptr);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "aten::cross_entropy")->ns, 150 * us);
  ASSERT_NE(entry(a, IdleCause::HostCompute, "Python between ops (inside the step, no op recorded)"), nullptr);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "Python between ops (inside the step, no op recorded)")->ns, 50 * us);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "autograd::engine::evaluate_function: MulBackward0")->ns, 90 * us);
  EXPECT_EQ(cause(a, IdleCause::Launch), 10 * us);
  EXPECT_EQ(cause(a, IdleCause::Unattributed), 0);
}

// No correlation ids: the launching thread is the one with runtime calls; every gap is swept on
// it. k1 [20,100), k2 [400,500); aten::mm [100,300) -> 200; [300,390) only the step -> between
// ops 90; cudaLaunchKernel [390,395) -> launch 5; [395,400) between ops 5.
// Without any runtime call either, nothing links the GPU to a thread: all unattributed, with why.
TEST(IdleAttribution, NoCorrelationIds) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 10, 5, trace::kNone);
  b.kernel("k1", 20, 80, trace::kNone);
  b.host("aten::mm", 100, 200);
  b.runtime("cudaLaunchKernel", 390, 5, trace::kNone);
  b.kernel("k2", 400, 100, trace::kNone);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.gpu.idle_ns, 300 * us);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "aten::mm")->ns, 200 * us);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "Python between ops (inside the step, no op recorded)")->ns, 95 * us);
  EXPECT_EQ(cause(a, IdleCause::Launch), 5 * us);

  StoreBuilder c;
  c.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  c.kernel("k1", 20, 80, trace::kNone);
  c.kernel("k2", 400, 100, trace::kNone);
  TraceAnalysis n = analyse(c.s);
  expect_consistent(n);
  EXPECT_EQ(n.gpu.attribution.unattributed_ns, 300 * us);
  ASSERT_EQ(n.gpu.attribution.entries.size(), 1u);
  EXPECT_NE(n.gpu.attribution.entries[0].host_event.find("no launching thread"), std::string::npos);
}

// One-time set-up: the first aten::conv2d (same Input Dims) takes 5 ms, its two later calls
// 100 µs (5000 >= 10 x 100 and >= 1 ms): its time is setup, and so is a cudaFree inside it.
// A 2 ms launch call is lazy module loading (setup) even outside a first call.
//   conv2d#1 [100,5100) > cudaFree [200,3200), cudaLaunchKernel [5090,5095) c2 -> k2 [5100,5200)
//     gap [100,5100): everything inside the slow first call, its launch and latency: setup 5000
//   aten::relu [5200,7220) > cudaLaunchKernel [5210,7210) c3 (2 ms) -> k3 [7300,7400)
//     gap [5200,7300): relu host_compute 10, the lazy launch setup 2000, its latency setup 90
//   conv2d#2 [7400,7500) > cudaLaunchKernel [7410,7415) c4 -> k4 [7500,7600)
//     gap [7400,7500): host_compute 10, launch 5 + latency 85;  conv2d#3 at 7600 the same.
// idle 7300 = setup 7090 + host_compute 30 + launch 180.
TEST(IdleAttribution, SlowFirstCallAndLazyLoadingAreSetup) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 10000, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 10, 5, 1);
  b.kernel("k1", 20, 80, 1);
  b.op_with_shapes("aten::conv2d", 100, 5000, "[[8, 3, 32, 32]]", "[]");
  b.runtime("cudaFree", 200, 3000, 90);
  b.runtime("cudaLaunchKernel", 5090, 5, 2);
  b.kernel("k2", 5100, 100, 2);
  b.host("aten::relu", 5200, 2020);
  b.runtime("cudaLaunchKernel", 5210, 2000, 3);
  b.kernel("k3", 7300, 100, 3);
  b.op_with_shapes("aten::conv2d", 7400, 100, "[[8, 3, 32, 32]]", "[]");
  b.runtime("cudaLaunchKernel", 7410, 5, 4);
  b.kernel("k4", 7500, 100, 4);
  b.op_with_shapes("aten::conv2d", 7600, 100, "[[8, 3, 32, 32]]", "[]");
  b.runtime("cudaLaunchKernel", 7610, 5, 5);
  b.kernel("k5", 7700, 100, 5);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.gpu.idle_ns, 7300 * us);
  EXPECT_EQ(cause(a, IdleCause::Setup), 7090 * us);
  EXPECT_EQ(entry(a, IdleCause::Setup, "cudaFree", "aten::conv2d")->ns, 3000 * us);
  EXPECT_EQ(entry(a, IdleCause::Setup, "cudaLaunchKernel", "aten::relu")->ns, 2090 * us);
  EXPECT_EQ(cause(a, IdleCause::HostCompute), 30 * us);
  EXPECT_EQ(cause(a, IdleCause::Launch), 180 * us);
  EXPECT_EQ(cause(a, IdleCause::Memory), 0);  // the cudaFree belongs to the first call's set-up
}

// Launched before the trace and cut at the end: k0 (correlation 77, no runtime call in the trace)
// and a last step the profiler cut (no GPU work: dropped). Steps [0,500), [500,1000).
//   c1 [250,255) -> k1 [300,400); aten::zeros [380,460); k0 [450,470); c2 [510,515) -> k2 [520,530)
//   gap [400,450): k0's launch unknown -> the launching thread: aten::zeros 50
//   gap [470,520): between ops [470,510) 40 (two step ranges), launch 5 + latency 5
TEST(IdleAttribution, LaunchedBeforeTheTraceAndCutTail) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 500, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 250, 5, 1);
  b.kernel("k1", 300, 100, 1);
  b.host("aten::zeros", 380, 80);
  b.kernel("k0", 450, 20, 77);
  b.host("ProfilerStep#2", 500, 500, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 510, 5, 2);
  b.kernel("k2", 520, 10, 2);
  b.host("ProfilerStep#3", 1000, 30, Category::UserAnnotation);
  TraceAnalysis a = analyse(b.s);
  expect_consistent(a);
  EXPECT_EQ(a.steps.dropped_tail_steps, 1);
  EXPECT_EQ(a.gpu.idle_ns, 100 * us);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "aten::zeros")->ns, 50 * us);
  EXPECT_EQ(entry(a, IdleCause::HostCompute, "Python between ops (inside the step, no op recorded)")->ns, 40 * us);
  EXPECT_EQ(cause(a, IdleCause::Launch), 10 * us);
}

}  // namespace
}  // namespace ts::analysis
