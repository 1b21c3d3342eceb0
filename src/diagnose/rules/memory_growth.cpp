// memory-growth: allocated memory rises step over step: something keeps each step's tensors
// (usually a loss accumulated without .item(), which keeps the whole graph alive).
// Evidence: allocated memory at each step end (trace [memory] events, or the agent's per-step
// record) over >= 3 steps, growing >= 1 MiB per step and >= 5% of the peak over the window.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> memory_growth(const Evidence& ev) {
  double slope = 0, peak = 0, first = 0, last = 0, total = -1;
  size_t n = 0;
  std::string source;
  if (ev.trace && ev.trace->memory.present && ev.trace->memory.allocated_at_step_end.size() >= size_t(th::kGrowthMinSteps)) {
    const auto& m = ev.trace->memory;
    n = m.allocated_at_step_end.size();
    slope = m.slope_bytes_per_step;
    peak = m.peak_allocated;
    first = m.allocated_at_step_end.front();
    last = m.allocated_at_step_end.back();
    total = m.device_total > 0 ? m.device_total : -1;
    source = "trace";
  } else if (ev.agent && ev.agent->mem_allocated_per_step.size() >= size_t(th::kGrowthMinSteps)) {
    const auto& a = *ev.agent;
    n = a.mem_allocated_per_step.size();
    slope = a.mem_slope_bytes_per_step;
    first = a.mem_allocated_per_step.front();
    last = a.mem_allocated_per_step.back();
    peak = std::max(a.mem_peak_bytes, *std::max_element(a.mem_allocated_per_step.begin(), a.mem_allocated_per_step.end()));
    total = a.device_mem_total_bytes;
    source = "agent";
  } else {
    return std::nullopt;
  }
  double grown = slope * (n - 1);
  if (slope < th::kGrowthMinBytesPerStep || peak <= 0 || grown < th::kGrowthShareOfPeak * peak) return std::nullopt;
  Finding f = make("memory-growth", Bottleneck::Memory, source);
  add(f, "growth_bytes_per_step", slope, "bytes");
  add(f, "steps", n, "count");
  add(f, "allocated_first_bytes", first, "bytes");
  add(f, "allocated_last_bytes", last, "bytes");
  if (total > 0) {
    double steps_left = (total - last) / slope;
    add(f, "steps_until_full", std::max(0.0, steps_left), "count");
  }
  f.severity = Severity::High;
  f.confidence = n >= 5 ? 0.85 : 0.65;
  f.recoverable_fraction = 0;  // a time bomb, not a slowdown: out of memory later
  f.title = fmt::format("Memory grows every step: +{} per step over {} steps", ts::human_bytes(slope), n);
  f.gain = total > 0 ? fmt::format("at this rate the GPU runs out of memory in about {:.0f} steps", std::max(0.0, (total - last) / slope))
                     : std::string("prevents an out-of-memory crash later in training");
  f.explanation =
      "Allocated memory at the end of each step should be flat after warm-up. It rises steadily "
      "here, so each step leaves tensors behind: typically a loss or an output stored in a Python "
      "list or running sum without .item()/.detach(), which keeps that step's whole computation "
      "graph alive, or a cache/dict that keeps references to tensors.";
  f.fix = "Store plain numbers (loss.item(), every N steps) or detached tensors, never the loss itself.";
  f.fix_code =
      "total_loss += loss.item()      # not: total_loss += loss\n"
      "history.append(out.detach())   # not: history.append(out)";
  return f;
}

}  // namespace ts::diagnose::rules
