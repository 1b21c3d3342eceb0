// Memory (docs/ANALYSES.md), from the profiler's `[memory]` instant events with Device Type 1
// (CUDA), on the device with the most such events:
//   allocated after each event = its "Total Allocated"; traces without it (2021 format) rebuild
//   the total as the running sum of "Bytes" (negative on free) from the trace start, so those
//   values are relative (MemoryStats::relative) and peak_reserved stays unknown (0).
//   allocated_at_step_end[i] value after the last event before step i's end (-1: none yet);
//   slope_bytes_per_step     least-squares slope of those values against the step index
//                            (a steady rise is a leak: tensors kept across steps);
//   peak_allocated/reserved  max over events inside the analysis window (or the value held
//                            through it when none falls inside);
//   device_total             totalGlobalMem of that device from deviceProperties.
#include <algorithm>
#include <map>

#include "analysis/passes.h"

namespace ts::analysis {

MemoryStats analyse_memory(const TraceIndex& idx, StepSummary& steps) {
  const auto& s = idx.s;
  MemoryStats out;
  std::map<int, int64_t> events_per_device;
  bool have_totals = false;
  for (uint32_t r : idx.memory) {
    const auto* a = s.args_of(r);
    if (!a || a->device_type != 1) continue;
    ++events_per_device[a->device_id];
    have_totals |= a->total_allocated >= 0;
  }
  int device = -1;
  int64_t most = 0;
  for (auto [d, c] : events_per_device)
    if (c > most) most = c, device = d;

  const trace::DeviceProperties* props = nullptr;
  int want = device >= 0 ? device : 0;
  for (const auto& p : s.meta.devices)
    if (p.id == want) props = &p;
  if (!props && !s.meta.devices.empty()) props = &s.meta.devices.front();
  if (props) out.device_total = props->total_global_mem;
  if (device < 0) return out;

  out.present = true;
  out.relative = !have_totals;
  out.device = device;
  const size_t n = steps.steps.size();
  std::vector<bool> known(n, false);
  int64_t allocated = 0, reserved = 0;
  int64_t held_alloc = 0, held_res = 0;  // values held when the window opens
  bool any = false;
  size_t next = 0;
  auto close_steps_before = [&](int64_t t) {
    for (; next < n && steps.steps[next].end_ns <= t; ++next) {
      known[next] = any;
      steps.steps[next].mem_allocated_end = any ? allocated : -1;
    }
  };
  for (uint32_t r : idx.memory) {
    const auto* a = s.args_of(r);
    if (!a || a->device_type != 1 || a->device_id != device) continue;
    const int64_t t = s.ts_ns[r];
    close_steps_before(t);
    if (have_totals) {
      if (a->total_allocated >= 0) allocated = a->total_allocated;
      if (a->total_reserved >= 0) reserved = a->total_reserved;
    } else if (a->bytes != -1) {
      allocated += a->bytes;
    }
    any = true;
    if (t < idx.window_begin) {
      held_alloc = allocated;
      held_res = reserved;
    } else if (t < idx.window_end) {
      out.peak_allocated = std::max(out.peak_allocated, allocated);
      out.peak_reserved = std::max(out.peak_reserved, reserved);
    }
  }
  close_steps_before(INT64_MAX);
  out.peak_allocated = std::max(out.peak_allocated, held_alloc);
  out.peak_reserved = std::max(out.peak_reserved, held_res);

  std::vector<double> xs, ys;
  for (size_t i = 0; i < n; ++i) {
    out.allocated_at_step_end.push_back(steps.steps[i].mem_allocated_end);
    if (known[i]) {
      xs.push_back(static_cast<double>(i));
      ys.push_back(static_cast<double>(steps.steps[i].mem_allocated_end));
    }
  }
  if (xs.size() >= 2) {
    double mx = 0, my = 0;
    for (size_t i = 0; i < xs.size(); ++i) mx += xs[i], my += ys[i];
    mx /= xs.size();
    my /= ys.size();
    double num = 0, den = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      num += (xs[i] - mx) * (ys[i] - my);
      den += (xs[i] - mx) * (xs[i] - mx);
    }
    if (den > 0) out.slope_bytes_per_step = num / den;
  }
  if (out.device_total > 0)
    out.peak_reserved_pct_of_device =
        100.0 * std::max(out.peak_reserved, out.peak_allocated) / out.device_total;
  return out;
}

}  // namespace ts::analysis
