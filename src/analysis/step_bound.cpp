// Bound-by per step (docs/ANALYSES.md), after Holistic Trace Analysis' critical-path bound types
// (cpu_bound, gpu_kernel_launch_overhead, gpu_kernel_kernel_overhead, gpu_compute_bound) plus
// data loading and communication, but from the GPU's timeline instead of a dependency graph, so it
// needs no synchronisation instrumentation and costs one pass.
//
// Over the GPU events (kernel, memcpy, memset; all devices and streams) starting inside the
// analysis window, every ns of every step goes to exactly one class:
//   gpu_compute      a non-communication GPU event runs (kernel, copy or memset);
//   communication    only communication kernels run (their exposed, non-overlapped time);
// and each idle gap [g0, g1) of the GPU as a whole (the leading gap from the window's start
// included) is split by the launch call L of the work that ends it (the earliest-starting
// launch call among the GPU events starting at g1, linked by correlation id):
//   kernel_kernel_overhead  L started at or before g0: the work was already queued when the GPU
//                           went idle (the GPU's own scheduling, or a wait on another stream);
//   cpu_bound               [g0, L.start): the host was busy elsewhere before it launched;
//   launch_overhead         [L.start, g1): the launch call itself and the queue to the GPU;
//   unknown                 no event at g1 has a known launch call;
//   (a zero-duration event, shorter than the trace's resolution, covers nothing but ends a gap);
//   cpu_bound               the trailing gap after the window's last GPU work (the host ran on);
//   data_loading            the cpu_bound and unknown parts during which the host was inside a
//                           DataLoader call (enumerate(DataLoader)#*.__next__): data, not compute,
//                           held the launches back.
// The classes sum to the step's duration. A step's label (bound_by) is its class with the most
// time (ties: the order above, compute first); the summary sums the classes over the steps,
// counts the steps per label and labels the whole window by its largest class.
// Trace without GPU events in the window: no labels (present = false).
#include <algorithm>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {

int largest(const int64_t (&ns)[kBoundClasses]) {
  int best = 0;
  for (int c = 1; c < kBoundClasses; ++c)
    if (ns[c] > ns[best]) best = c;
  return best;
}

void push(Intervals& v, int64_t b, int64_t e) {
  if (e > b) v.push_back({b, e});
}

}  // namespace

BoundSummary analyse_step_bound(const TraceIndex& idx, StepSummary& steps) {
  const auto& s = idx.s;
  BoundSummary out;
  if (steps.steps.empty()) return out;
  const std::span<const uint32_t> gpu = idx.windowed(idx.gpu);
  if (gpu.empty()) return out;
  out.present = true;

  Intervals cls[kBoundClasses];
  Intervals comm;
  for (uint32_t r : gpu) {
    const bool is_comm = s.cat[r] == trace::Category::Kernel && idx.flag(r, kCommKernel);
    add_merged(is_comm ? comm : cls[kBoundGpuCompute], s.ts_ns[r], s.end_ns(r));  // gpu is sorted by start
  }
  merge(cls[kBoundGpuCompute]);
  merge(comm);
  cls[kBoundCommunication] = subtract(comm, cls[kBoundGpuCompute]);

  // Idle gaps of the GPU as a whole, in time order (so each class's list stays merged).
  Intervals idle_cpu, idle_unknown;
  int64_t max_end = idx.window_begin;
  for (size_t i = 0; i < gpu.size();) {
    const int64_t ts = s.ts_ns[gpu[i]];
    size_t j = i;
    int64_t launch = INT64_MAX;
    for (; j < gpu.size() && s.ts_ns[gpu[j]] == ts; ++j) {
      const uint32_t rt = idx.launcher(gpu[j]);
      if (rt != kNoRow) launch = std::min(launch, s.ts_ns[rt]);
    }
    if (ts > max_end) {
      const int64_t g0 = max_end, g1 = ts;
      if (launch == INT64_MAX) {
        push(idle_unknown, g0, g1);
      } else if (launch <= g0) {
        push(cls[kBoundKernelKernel], g0, g1);
      } else {
        const int64_t c = std::min(launch, g1);
        push(idle_cpu, g0, c);
        push(cls[kBoundLaunch], c, g1);
      }
    }
    for (; i < j; ++i) max_end = std::max(max_end, s.end_ns(gpu[i]));
  }
  push(idle_cpu, max_end, idx.window_end);

  Intervals loading;
  for (uint32_t r : idx.host_ops)
    if (idx.flag(r, kDataLoader)) add_merged(loading, s.ts_ns[r], s.end_ns(r));
  merge(loading);
  Intervals data_cpu = intersect(idle_cpu, loading), data_unknown = intersect(idle_unknown, loading);
  cls[kBoundCpu] = subtract(idle_cpu, data_cpu);
  cls[kBoundUnknown] = subtract(idle_unknown, data_unknown);
  cls[kBoundDataLoading] = merged([&] {
    Intervals v = std::move(data_cpu);
    v.insert(v.end(), data_unknown.begin(), data_unknown.end());
    return v;
  }());

  const Intervals bins = step_intervals(steps);
  for (int c = 0; c < kBoundClasses; ++c) {
    const std::vector<int64_t> per_step = lengths_per_bin(cls[c], bins);
    for (size_t i = 0; i < steps.steps.size(); ++i) {
      steps.steps[i].bound_ns[c] = per_step[i];
      out.total_ns[c] += per_step[i];
    }
  }
  for (Step& st : steps.steps) {
    st.bound_by = largest(st.bound_ns);
    ++out.steps_by_label[st.bound_by];
  }
  out.bound_by = largest(out.total_ns);
  return out;
}

}  // namespace ts::analysis
