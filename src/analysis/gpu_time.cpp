// GPU time (Holistic Trace Analysis' temporal and idle-time breakdowns, plus the TensorBoard
// plugin's utilization estimates; docs/ANALYSES.md).
//
// Over the GPU events (kernel, memcpy, memset) that start inside the analysis window, all
// devices and streams together:
//   span        last end - first start
//   busy        |union of GPU events|;   idle = span - busy
//   compute     |union of kernels other than communication kernels|
//   non_compute busy - compute (communication kernels, copies, memsets not under compute)
// Idle attribution (HTA's rule, applied to the GPU's idle gaps across all streams so that the
// three parts sum to idle): each gap between GPU activity is
//   host wait   if a GPU event starting at the gap's end was launched by a runtime call that
//               started after the gap began (the GPU waited for the CPU to launch it);
//   kernel wait else if the gap is under 30 µs (back-to-back launch overhead);
//   other       otherwise (events without a known launcher, launched early but delayed).
// utilization_pct   |union of kernels| inside the steps / step time (TensorBoard's "GPU Utilization").
// est_sm_efficiency sum over kernels of dur x min(blocks / numSms, 1) / step time, capped at 100
//                   (-1 without grid sizes or deviceProperties).
// est_occupancy     duration-weighted mean of the kernels' "est. achieved occupancy %" (-1 if none).
#include <algorithm>
#include <map>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {
constexpr int64_t kKernelWaitNs = 30'000;

int device_of(const trace::EventStore& s, uint32_t r) {
  if (!trace::EventStore::is_named_id(s.pid(r))) return static_cast<int>(s.pid(r));
  const auto* a = s.args_of(r);
  return a && a->device_id >= 0 ? a->device_id : 0;
}
}  // namespace

GpuTime analyse_gpu_time(const TraceIndex& idx, StepSummary& steps) {
  const auto& s = idx.s;
  GpuTime out;
  const std::span<const uint32_t> gpu = idx.windowed(idx.gpu);
  if (gpu.empty()) return out;
  out.present = true;

  // The unions are measured as they grow (gpu is sorted by start), not stored: on a large trace
  // each held one interval per idle gap, megabytes of fresh memory.
  const Intervals bins = step_intervals(steps);
  UnionMeter all(bins), compute, kernels(merged(bins));
  std::vector<int> devices;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (uint32_t r : gpu) {
    const Interval iv{s.ts_ns[r], s.end_ns(r)};
    all.add(iv.begin, iv.end);
    first = std::min(first, iv.begin);
    last = std::max(last, iv.end);
    if (s.cat[r] == trace::Category::Kernel) {
      kernels.add(iv.begin, iv.end);
      if (!idx.flag(r, kCommKernel)) compute.add(iv.begin, iv.end);
    }
    int d = device_of(s, r);
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  all.finish();
  compute.finish();
  kernels.finish();
  out.devices = static_cast<int>(devices.size());
  out.span_ns = last - first;
  out.busy_ns = all.total;
  out.idle_ns = out.span_ns - out.busy_ns;
  out.compute_ns = compute.total;
  out.non_compute_ns = out.busy_ns - out.compute_ns;
  if (out.span_ns > 0) {
    out.idle_pct = 100.0 * out.idle_ns / out.span_ns;
    out.compute_pct = 100.0 * out.compute_ns / out.span_ns;
    out.non_compute_pct = 100.0 * out.non_compute_ns / out.span_ns;
  }

  // Idle gaps of the GPU as a whole (sorted by start, `gpu` is); the events that end a gap
  // decide its cause.
  int64_t max_end = INT64_MIN;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int64_t ts = s.ts_ns[gpu[i]];
    if (max_end != INT64_MIN && ts > max_end) {
      const int64_t gap = ts - max_end;
      bool host_wait = false;
      for (size_t j = i; j < gpu.size() && s.ts_ns[gpu[j]] == ts; ++j) {
        const uint32_t rt = idx.launcher(gpu[j]);
        host_wait |= rt != kNoRow && s.ts_ns[rt] > max_end;
      }
      if (host_wait) out.idle_host_wait_ns += gap;
      else if (gap < kKernelWaitNs) out.idle_kernel_wait_ns += gap;
      else out.idle_other_ns += gap;
    }
    max_end = std::max(max_end, s.end_ns(gpu[i]));
  }

  const int64_t step_time = steps.total_ns;
  if (step_time > 0) {
    int64_t in_steps = 0;  // |steps ∩ kernels|: the merged steps are disjoint bins
    for (int64_t v : kernels.per_bin) in_steps += v;
    out.utilization_pct = 100.0 * in_steps / step_time;
  }
  for (size_t i = 0; i < steps.steps.size(); ++i) steps.steps[i].gpu_busy_ns = all.per_bin[i];

  // TensorBoard's estimates from the kernels' launch geometry.
  double sm_weighted = 0, occ_weighted = 0, occ_time = 0;
  bool have_sm = false;
  for (uint32_t r : gpu) {
    if (s.cat[r] != trace::Category::Kernel) continue;
    const auto* a = s.args_of(r);
    if (!a) continue;
    const double dur = static_cast<double>(s.dur_ns[r]);
    if (a->occupancy_pct >= 0) {
      occ_weighted += dur * a->occupancy_pct;
      occ_time += dur;
    }
    const int dev = device_of(s, r);
    int sms = 0;
    for (const auto& p : s.meta.devices)
      if (p.id == dev) sms = p.num_sms;
    const double blocks = static_cast<double>(a->grid[0]) * a->grid[1] * a->grid[2];
    if (sms > 0 && blocks > 0) {
      sm_weighted += dur * std::min(blocks / sms, 1.0);
      have_sm = true;
    }
  }
  if (have_sm && step_time > 0) out.est_sm_efficiency_pct = std::min(100.0, 100.0 * sm_weighted / step_time);
  if (occ_time > 0) out.est_occupancy_pct = occ_weighted / occ_time;
  return out;
}

}  // namespace ts::analysis
