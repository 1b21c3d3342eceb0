// warm-up: the trace shows start-up, not steady state. One-time set-up -- cuDNN's algorithm
// search and workspace allocation in the first call of each convolution, CUDA's lazy loading of
// kernel modules at first launch, torch.compile -- holds the GPU idle for a large part of the
// window (idle attribution cause "setup", analysis/idle_attribution.cpp).
// Evidence: setup idle >= kWarmupSetupPctOfSpan of the GPU's span (high from kWarmupHighPctOfSpan).
// Gain: none to claim for training -- a real run pays set-up once; the fix is to profile steps
// after it, so the other findings measure the loop that repeats.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> warm_up(const Evidence& ev) {
  const auto* a = idle_attribution(ev);
  if (!a || ev.trace->gpu.span_ns <= 0) return std::nullopt;
  const auto& g = ev.trace->gpu;
  const int64_t setup = a->cause_ns(analysis::IdleCause::Setup);
  const double pct = 100.0 * setup / g.span_ns;
  if (pct < th::kWarmupSetupPctOfSpan) return std::nullopt;
  const analysis::IdleEntry* top = top_idle_entry(*a, analysis::IdleCause::Setup);
  Finding f = make("warm-up", Bottleneck::Config, "trace");
  add(f, "setup_idle_ms", setup / 1e6, "ms");
  add(f, "setup_pct_of_gpu_span", pct, "%");
  add(f, "gpu_idle_pct", g.idle_pct, "%");
  if (top) add(f, "top_setup_ms", top->ns / 1e6, "ms");
  f.severity = pct >= th::kWarmupHighPctOfSpan ? Severity::High : Severity::Medium;
  f.confidence = 0.85;
  f.recoverable_fraction = 0;  // one-time: not a per-step cost (see gain)
  f.title = fmt::format("This trace shows start-up, not steady state: one-time set-up keeps the GPU idle {:.0f}% of "
                        "its span ({}); the largest part, {}, in {}",
                        pct, ts::human_ns(setup), ts::human_ns(top ? top->ns : 0),
                        top ? idle_where(*top) : std::string("set-up calls"));
  f.gain = "none per step: training pays set-up once; profile later steps to see the loop that repeats";
  f.explanation =
      "The first call of each operator does work later calls skip: cuDNN tries convolution algorithms "
      "and allocates workspaces (torch.backends.cudnn.benchmark), CUDA loads kernel modules on their "
      "first launch (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7), the caching allocator "
      "grows with cudaMalloc/cudaFree, and torch.compile compiles. While the host does this the GPU "
      "waits, so a trace that starts at the first step is dominated by set-up and says little about "
      "the steady-state loop; the other findings on it describe start-up too.";
  f.fix = "Profile after warm-up: skip the first steps with torch.profiler.schedule (wait/warmup), then "
          "analyse that trace.";
  f.fix_code =
      "prof = torch.profiler.profile(\n"
      "    schedule=torch.profiler.schedule(wait=5, warmup=2, active=3),\n"
      "    on_trace_ready=torch.profiler.tensorboard_trace_handler(\"./trace\"))\n"
      "with prof:\n"
      "    for step, batch in enumerate(loader):\n"
      "        train_step(batch)\n"
      "        prof.step()";
  return f;
}

}  // namespace ts::diagnose::rules
