// memory-growth: memory rises steadily over the run's steps: something keeps each step's tensors
// (usually a loss or an output stored without .item()/.detach(), which keeps that step's graph
// alive). A trend, tested against the readings' own noise (growth_trend.h): the caching
// allocator's allocated bytes on a GPU (the agent's readings, or the trace's [memory] events);
// on the CPU the C heap's in-use bytes, then the process RSS less the heap's free bytes (freed
// memory stays resident, so a leak that reuses it is flat in the RSS and memory glibc merely keeps
// raises it; Python's small objects are in the RSS only). Any rate
// that stands out of the noise counts: 0.5 MiB per step is 50 GB after 100,000 steps. The
// finding names what keeps the tensors when the agent found it
// (a `leak` site: the variable and the line that stores into it, agent/trainscope_agent/leaks.py).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/growth_trend.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

namespace {

// The steps the script will run when its framework says so (max_steps), else 100,000.
double horizon_steps(const Evidence& ev) {
  if (const CodeSite* c = config_site(ev)) {
    const double n = c->knob_number("max_steps");
    if (n > 0) return n;
  }
  return th::kGrowthHorizonSteps;
}

}  // namespace

std::optional<Finding> memory_growth(const Evidence& ev) {
  GrowthTrend g;
  double peak = 0, first = 0, last = 0, total = -1, steps_now = 0, last_resident = -1;
  std::string source, what;
  if (ev.trace && ev.trace->memory.present && ev.trace->memory.allocated_at_step_end.size() >= size_t(th::kGrowthMinSteps)) {
    const auto& m = ev.trace->memory;
    std::vector<double> x, y;
    std::vector<int> seg;
    for (size_t i = 0; i < m.allocated_at_step_end.size(); ++i) {
      x.push_back(double(i));
      y.push_back(m.allocated_at_step_end[i]);
      seg.push_back(i == 0 ? -1 : 0);  // the first step allocates the model's state once
    }
    g = growth_trend(x, y, seg);
    peak = m.peak_allocated;
    first = m.allocated_at_step_end.front();
    last = m.allocated_at_step_end.back();
    total = m.device_total > 0 ? m.device_total : -1;
    steps_now = double(x.size());
    source = "trace";
    what = "allocated memory";
  } else if (ev.agent && ev.agent->mem_allocated_per_step.size() >= size_t(th::kGrowthMinSteps)) {
    const auto& a = *ev.agent;
    std::vector<double> x = a.mem_at_step;
    std::vector<int> seg = a.mem_segment;
    if (x.size() != a.mem_allocated_per_step.size()) {  // records from older agents: every reading, evenly
      x.clear();
      seg.assign(a.mem_allocated_per_step.size(), 0);
      for (size_t i = 0; i < a.mem_allocated_per_step.size(); ++i) x.push_back(double(i));
    }
    // On the CPU the C heap first (freed memory that stays resident hides a leak from the RSS),
    // then the RSS at the same steps (Python's small objects are not in the heap), less the heap's
    // free bytes where the agent read them (glibc keeps freed memory resident and grows its arena
    // for large blocks: the RSS rises with nothing kept).
    const std::vector<double>* series = &a.mem_allocated_per_step;
    g = growth_trend(x, *series, seg);
    bool rss = a.mem_source == "rss", less_free = false;
    if (!g.leak && a.mem_source == "heap" && a.mem_rss_per_step.size() == x.size()) {
      const auto& used = a.mem_rss_used_per_step.size() == x.size() ? a.mem_rss_used_per_step : a.mem_rss_per_step;
      GrowthTrend r = growth_trend(x, used, seg);
      if (r.leak) g = r, series = &used, rss = true, less_free = &used != &a.mem_rss_per_step;
    }
    first = series->front();
    last = series->back();
    peak = std::max(a.mem_peak_bytes, *std::max_element(series->begin(), series->end()));
    const bool host = a.mem_source != "cuda";
    total = host ? a.host_mem_total_bytes : a.device_mem_total_bytes;
    // The RAM fills by the RSS, whichever series showed the growth.
    if (host && !a.mem_rss_per_step.empty()) last_resident = a.mem_rss_per_step.back();
    steps_now = double(std::max<int64_t>(a.steps, int64_t(x.empty() ? 0 : x.back())));
    source = "agent";
    what = !host ? "allocated GPU memory" : rss ? (less_free ? "the process's resident memory (RSS) less the C heap's free bytes"
                                    : "the process's resident memory (RSS)") : "the C heap's memory in use";
  } else {
    return std::nullopt;
  }
  if (peak <= 0) return std::nullopt;
  // Too few readings for a noise estimate (a trace's profiler window): a strict rise instead.
  const bool strict_rise = g.points >= th::kGrowthMinSteps && g.slope >= th::kGrowthShortMinBytesPerStep &&
                           g.grown >= th::kGrowthShortShareOfPeak * peak && g.tau >= 0.999;
  // A job the OOM killer ended proved that memory filled: its rise counts however few steps it ran.
  const bool oom = ev.job && ev.job->oom_killed();
  if (!(oom && g.rising) && !(g.points < kGrowthMinPoints ? strict_rise : g.leak)) return std::nullopt;
  const double slope = g.slope;
  Finding f = make("memory-growth", Bottleneck::Memory, source);
  add(f, "growth_bytes_per_step", slope, "bytes");
  add(f, "steps", g.span_steps, "count");
  add(f, "grown_bytes", g.grown, "bytes");
  add(f, "noise_bytes", g.noise, "bytes");
  add(f, "trend_tau", g.tau, "");
  add(f, "allocated_first_bytes", first, "bytes");
  add(f, "allocated_last_bytes", last, "bytes");
  const double horizon = horizon_steps(ev);
  const double at_horizon = last + slope * std::max(0.0, horizon - steps_now);
  add(f, "horizon_steps", horizon, "count");
  add(f, "at_horizon_bytes", at_horizon, "bytes");
  double steps_left = -1;
  if (total > 0) {
    steps_left = std::max(0.0, (total - (last_resident >= 0 ? last_resident : last)) / slope);
    add(f, "steps_until_full", steps_left, "count");
  }
  f.severity = Severity::High;
  f.confidence = g.tau >= 0.8 ? 0.9 : 0.75;
  f.recoverable_fraction = 0;  // a time bomb, not a slowdown: out of memory later
  f.title = fmt::format("Memory grows every step: +{} per step over {:.0f} steps ({} in all)", ts::human_bytes(slope),
                        g.span_steps, ts::human_bytes(g.grown));
  std::string horizon_text = fmt::format("{} at step {:.0f}", ts::human_bytes(at_horizon), horizon);
  if (total > 0)
    f.gain = steps_left < horizon
                 ? fmt::format("at this rate {} fills the {} {} in about {:.0f} more steps (it would be {})", what,
                               ts::human_bytes(total), source == "agent" && ev.agent->mem_source != "cuda" ? "of RAM" : "GPU",
                               steps_left, horizon_text)
                 : fmt::format("at this rate {} reaches {}", what, horizon_text);
  else
    f.gain = fmt::format("at this rate {} reaches {}: prevents an out-of-memory crash later", what, horizon_text);
  f.explanation = fmt::format(
      "Memory at the end of each step should be flat after warm-up. Here {} rises by {} per step, "
      "steadily (Kendall's tau {:.2f} against the step) and far beyond its own step-to-step noise ({} in all "
      "against {} of noise), to the last step. So each step leaves tensors behind: typically a loss or an "
      "output kept in a Python list, dict or running sum without .item()/.detach(), which keeps that step's "
      "whole autograd graph alive (PyTorch FAQ, \"My model reports cuda runtime error(2): out of memory\").",
      what, ts::human_bytes(slope), g.tau, ts::human_bytes(g.grown), ts::human_bytes(g.noise));
  if (oom) {
    f.title += ", until the kernel's OOM killer ended the job";
    f.gain = fmt::format("it filled the memory in {:.0f} steps: the kernel's OOM killer ended the job there", double(ev.job->steps));
    f.explanation += fmt::format(" Then the kernel's OOM killer killed the job (SIGKILL, /proc/vmstat's oom_kill +{}): "
                                 "this growth is what filled the memory.", ev.job->oom_kills);
  }
  f.fix = "Store plain numbers (loss.item(), every N steps) or detached tensors, never the loss or the output itself.";
  f.fix_code =
      "total_loss += loss.item()      # not: total_loss += loss\n"
      "history.append(out.detach())   # not: history.append(out)";
  if (ev.agent)
    for (const auto& s : ev.agent->sites)
      if (s.role == "leak" && !s.file.empty()) f.sites.push_back(site_ref(s, s.detail));
  return f;
}

}  // namespace ts::diagnose::rules
