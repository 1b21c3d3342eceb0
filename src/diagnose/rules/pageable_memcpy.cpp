// pageable-memcpy: host<->device copies from pageable memory, and blocking copies. A pageable
// copy is staged through a driver bounce buffer (slower) and cannot overlap compute; a blocking
// copy (cudaMemcpy, .cuda() without non_blocking) also stalls the CPU (nsys rules; CUDA's pinned-memory guidance).
// Evidence: the trace's pageable copies (every step, or >= 0.5% of step time) and synchronous
// cudaMemcpy calls; or the agent's count of pageable/blocking H2D copies per step.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> pageable_memcpy(const Evidence& ev) {
  Finding f;
  if (const auto* t = trace_with_steps(ev); t && (t->copies.pageable_count > 0 || t->copies.blocking_memcpy_calls > 0)) {
    const auto& c = t->copies;
    double steps = std::max<size_t>(1, t->steps.steps.size());
    double pct = 100.0 * c.pageable_time_ns / t->steps.total_ns;
    double per_step = c.pageable_count / steps;
    double blocking_per_step = c.blocking_memcpy_calls / steps;
    if (pct < th::kPageablePctOfStep && per_step < 1 && blocking_per_step < 1) return std::nullopt;
    f = make("pageable-memcpy", Bottleneck::Transfer, "trace");
    if (c.pageable_count > 0) {
      add(f, "pageable_copies", c.pageable_count, "count");
      add(f, "pageable_copies_per_step", per_step, "count");
      add(f, "pageable_bytes", c.pageable_bytes, "bytes");
      add(f, "pageable_time_ms", c.pageable_time_ns / 1e6, "ms");
      add(f, "pageable_pct_of_step", pct, "%");
    }
    if (c.blocking_memcpy_calls > 0) add(f, "blocking_memcpy_calls", c.blocking_memcpy_calls, "count");
    // What the GPU waited on copies alone (memcpy class of the breakdown) bounds the gain.
    double exposed = std::min<double>(c.pageable_time_ns, t->steps.total.memcpy);
    f.recoverable_fraction = std::clamp(exposed / t->steps.total_ns, 0.0, 0.9);
    f.confidence = 0.9;
    if (c.pageable_count > 0)
      f.title = fmt::format("Pageable{} copies: {} copies of {} from pageable memory ({:.1f}% of step time)",
                            c.blocking_memcpy_calls > 0 ? " and blocking" : "", c.pageable_count,
                            ts::human_bytes(c.pageable_bytes), pct);
    else
      f.title = fmt::format("Blocking copies: {} synchronous memcpy calls ({:.1f} per step)", c.blocking_memcpy_calls,
                            blocking_per_step);
  } else if (ev.agent && (ev.agent->h2d_pageable > 0 || ev.agent->h2d_blocking > 0)) {
    const auto& a = *ev.agent;
    f = make("pageable-memcpy", Bottleneck::Transfer, "agent");
    add(f, "h2d_copies", a.h2d_copies, "count");
    add(f, "h2d_pageable", a.h2d_pageable, "count");
    add(f, "h2d_blocking", a.h2d_blocking, "count");
    add(f, "h2d_pct", a.h2d_pct, "%");
    if (a.h2d_bytes_per_step > 0) add(f, "h2d_bytes_per_step", a.h2d_bytes_per_step, "bytes");
    f.recoverable_fraction = std::clamp(a.h2d_pct / 100.0, 0.0, 0.9);
    f.confidence = 0.85;
    f.title = fmt::format("Pageable/blocking copies: {} of {} host-to-device copies pageable, {} blocking",
                          a.h2d_pageable, a.h2d_copies, a.h2d_blocking);
  } else {
    return std::nullopt;
  }
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Low);
  f.gain = fmt::format("copies the GPU waits for: pinned async copies give {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "Copies from ordinary (pageable) host memory go through a staging buffer in the driver, run "
      "at a fraction of the PCIe bandwidth and cannot overlap with compute; without "
      "non_blocking=True the CPU also waits for each copy. pin_memory=True makes the DataLoader "
      "hand over page-locked batches, and non_blocking=True lets the copy run while the GPU is busy.";
  f.fix = "pin_memory=True on the DataLoader and .cuda(non_blocking=True) (or .to(device, non_blocking=True)) on every batch.";
  f.fix_code =
      "loader = DataLoader(dataset, batch_size=BS, num_workers=N, pin_memory=True)\n"
      "for xb, yb in loader:\n"
      "    xb = xb.cuda(non_blocking=True)\n"
      "    yb = yb.cuda(non_blocking=True)";
  f.fix_settings = {{"dataloader.pin_memory", "true"}, {"copy.non_blocking", "true"}};
  point_at_calls(f, ev, {"h2d"});
  point_at_fix(f, ev, "dataloader", "pin_memory=True here", KnobFix{{{"dataloader_pin_memory", "True"}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
