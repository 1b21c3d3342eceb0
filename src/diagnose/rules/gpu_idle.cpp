// gpu-idle: the GPU idles most of the window (>= kGpuIdleMostPct of its span) and no specific
// rule explains it. Names the largest explained idle cause of the idle attribution
// (analysis/idle_attribution.cpp; "unattributed" only when nothing else is left, with no gain
// claimed) and its top host events, so the verdict never calls a mostly idle GPU "no large
// bottleneck".
// Silent when the largest cause has its own rule and that rule fires on the same evidence
// (setup: warm-up, sync: host-sync, data_loading: dataloader-starvation, launch/host_compute:
// launch-bound, optimizer: unfused-optimizer, collective: communication-bound).
// Gain: the idle time of that cause -- what taking that host work off the GPU's critical path
// (making it faster, moving it off the launching thread, overlapping it) gives back at most.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {
namespace {

using analysis::IdleCause;

bool explained_elsewhere(IdleCause c, const Evidence& ev) {
  switch (c) {
    case IdleCause::Setup: return warm_up(ev).has_value();
    case IdleCause::Sync: return host_sync(ev).has_value();
    case IdleCause::DataLoading: return dataloader_starvation(ev).has_value();
    case IdleCause::Launch:
    case IdleCause::HostCompute: return launch_bound(ev).has_value();
    case IdleCause::Optimizer: return unfused_optimizer(ev).has_value();
    case IdleCause::Collective: return communication_bound(ev).has_value();
    default: return false;
  }
}

struct Advice {
  Bottleneck b;
  const char* what;  // what happened during that idle time, in words
  const char* fix;
};
Advice advice_for(IdleCause c) {
  switch (c) {
    case IdleCause::Sync: return {Bottleneck::HostSync, "the host blocks on the GPU", "Remove the blocking call from the loop (keep values on the GPU, read them every N steps)."};
    case IdleCause::Launch: return {Bottleneck::Launch, "the host launches work", "Fewer, larger kernels: torch.compile, CUDA graphs or a larger batch."};
    case IdleCause::DataLoading: return {Bottleneck::DataPipeline, "the host waits for the next batch", "Load data in DataLoader workers (num_workers > 0, pin_memory=True)."};
    case IdleCause::Optimizer: return {Bottleneck::HostCpu, "the host runs the optimizer step", "Use the fused or foreach optimizer implementation (fused=True / foreach=True)."};
    case IdleCause::Memory: return {Bottleneck::Memory, "the host allocates or frees GPU memory", "Keep the caching allocator warm: no torch.cuda.empty_cache() in the loop, no tensors whose shapes change every step."};
    case IdleCause::Setup: return {Bottleneck::Config, "the host does one-time set-up", "Profile steps after warm-up."};
    case IdleCause::HostCompute: return {Bottleneck::HostCpu, "the host runs its own code", "Move that host work off the training loop, make it cheaper, or overlap it with GPU work (queue the next step's kernels first)."};
    case IdleCause::StreamWait: return {Bottleneck::Compute, "queued work waits on another stream", "Overlap the streams: record the event earlier or split the dependent work."};
    case IdleCause::Collective: return {Bottleneck::Communication, "collectives wait for their peers", "Overlap communication with compute (DDP bucket sizes, gradient accumulation with no_sync)."};
    case IdleCause::GpuOverhead: return {Bottleneck::Launch, "the GPU switches between queued kernels", "Fewer, larger kernels (torch.compile) or CUDA graphs."};
    case IdleCause::Untraced:
    case IdleCause::Unattributed: break;
  }
  return {Bottleneck::None, "nothing recorded explains it", "Record the launching threads' CPU ops (a full, unsampled profiler window) to see why."};
}

}  // namespace

std::optional<Finding> gpu_idle(const Evidence& ev) {
  const auto* a = idle_attribution(ev);
  const auto* t = trace_with_steps(ev);
  if (!a || !t || t->gpu.idle_pct < th::kGpuIdleMostPct) return std::nullopt;
  // The largest explained cause: "nothing recorded" and "untraced" are no fix to recommend (they
  // only say the trace lacks events); "nothing recorded" is named only when nothing else is left.
  int best = static_cast<int>(IdleCause::Unattributed);
  for (int c = 0; c < analysis::kIdleCauses; ++c)
    if (c != static_cast<int>(IdleCause::Unattributed) && c != static_cast<int>(IdleCause::Untraced) && a->by_cause_ns[c] > 0 &&
        (best == static_cast<int>(IdleCause::Unattributed) || a->by_cause_ns[c] > a->by_cause_ns[best]))
      best = c;
  const auto cause = static_cast<IdleCause>(best);
  if (explained_elsewhere(cause, ev)) return std::nullopt;
  const Advice adv = advice_for(cause);
  const int64_t ns = a->by_cause_ns[best];
  Finding f = make("gpu-idle", adv.b, "trace");
  add(f, "gpu_idle_pct", t->gpu.idle_pct, "%");
  add(f, "cause_idle_ms", ns / 1e6, "ms");
  add(f, "cause_pct_of_idle", 100.0 * ns / a->idle_ns, "%");
  add(f, "unattributed_ms", a->unattributed_ns / 1e6, "ms");
  std::string where;
  int shown = 0;
  for (const auto& e : a->entries) {
    if (e.cause != cause || shown == 3) continue;
    where += fmt::format("{}{} {:.0f}%", shown ? "; " : "", idle_where(e), e.pct_of_idle);
    point_at_frame(f, e, fmt::format("{:.0f}% of the GPU's idle time: {}", e.pct_of_idle, e.host_event));
    ++shown;
  }
  f.recoverable_fraction = cause == IdleCause::Unattributed ? 0 : std::clamp(double(ns) / t->steps.total_ns, 0.0, 0.9);
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Medium);
  f.confidence = cause == IdleCause::Unattributed ? 0.4 : 0.6;
  // Idle while the host launches or runs its own code: the step is host-bound (HTA's "host wait").
  const bool host_bound = cause == IdleCause::HostCompute || cause == IdleCause::Launch;
  f.title = fmt::format("{}he GPU idles {:.0f}% of the time; the largest explained part, {:.0f}% of the idle time, is while {} ({})",
                        host_bound ? "Host-bound: t" : "T", t->gpu.idle_pct, 100.0 * ns / a->idle_ns, adv.what,
                        analysis::idle_cause_name(cause));
  if (cause == IdleCause::Unattributed)
    f.title = fmt::format("The GPU idles {:.0f}% of the time and nothing recorded in the trace explains it", t->gpu.idle_pct);
  f.gain = cause == IdleCause::Unattributed
               ? std::string("none to claim until a trace shows the cause")
               : fmt::format("taking that work off the GPU's path gives {}", gain_text(f.recoverable_fraction));
  f.explanation = fmt::format(
      "trainscope charges every idle GPU nanosecond to what the launching thread was doing then "
      "(docs/ANALYSES.md, GPU idle by cause). The largest share here: {}. Largest host events: {}.",
      analysis::idle_cause_name(cause), where.empty() ? "none recorded" : where);
  f.fix = adv.fix;
  return f;
}

}  // namespace ts::diagnose::rules
