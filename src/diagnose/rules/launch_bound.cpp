// launch-bound: hundreds of tiny kernels per step; the GPU finishes each one faster than the
// CPU can launch the next, so it idles between them (the PyTorch tuning guide's
// advice to fuse pointwise ops; HTA launch statistics and idle "host wait").
// Evidence: trace with >= 100 kernels per step and >= 30% of step time with the GPU idle while
// the host launches or runs framework code (breakdown classes runtime + cpu_exec; the
// DataLoader's share is not counted); >= 50% of kernels under 10 µs makes it "launch-bound" proper
// (higher confidence), else the title says host-bound. Or the lab's compile gain >= 20%.
// Never when the launch queue is deep: a median launch delay over kLaunchDeepQueueUs means the
// host runs ahead of the GPU, so the GPU is not waiting for launches (a blocking call or other
// host work is what drains it; host-sync / gpu-idle speak then). With an idle attribution
// (analysis/idle_attribution.cpp) the wait is the GPU idle charged to launches and host code
// between them (causes launch + host_compute), which is also the gain.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> launch_bound(const Evidence& ev) {
  Finding f;
  bool tiny = true;
  bool compiled = (ev.trace && ev.trace->parallel.compiled) || (ev.agent && ev.agent->compiled);
  const auto* t = trace_with_steps(ev);
  if (t && t->gpu.present && t->kernels.count > 0) {
    const auto& k = t->kernels;
    const auto& g = t->gpu;
    if (k.launch.launches > 0 && k.launch.median_launch_delay_ns / 1e3 > th::kLaunchDeepQueueUs) return std::nullopt;
    double overhead_pct = t->steps.pct(t->steps.total.runtime + t->steps.total.cpu_exec);
    if (const auto* a = idle_attribution(ev))
      overhead_pct = t->steps.pct(a->cause_ns(analysis::IdleCause::Launch) + a->cause_ns(analysis::IdleCause::HostCompute));
    if (k.per_step < th::kLaunchKernelsPerStep || overhead_pct < th::kLaunchHostOverheadPct) return std::nullopt;
    // Mostly tiny kernels: the launches themselves are the cost. Otherwise the host's framework
    // work between launches is (same remedies, less certain which part).
    tiny = k.under_10us_pct >= th::kLaunchTinyKernelPct;
    f = make("launch-bound", Bottleneck::Launch, "trace");
    add(f, "kernels_per_step", k.per_step, "count");
    add(f, "kernels_under_10us_pct", k.under_10us_pct, "%");
    add(f, "median_kernel_us", k.median_ns / 1e3, "us");
    add(f, "host_overhead_pct_of_step", overhead_pct, "%");
    add(f, "gpu_idle_pct", g.idle_pct, "%");
    if (k.launch.launches > 0) {
      add(f, "short_kernels", k.launch.short_kernels, "count");
      add(f, "median_launch_us", k.launch.median_runtime_ns / 1e3, "us");
      add(f, "median_launch_delay_us", k.launch.median_launch_delay_ns / 1e3, "us");
    }
    // Fusing removes the launch gaps: the step time the GPU waits on launches and framework code.
    f.recoverable_fraction = std::clamp(overhead_pct / 100, 0.0, 0.9);
    f.confidence = tiny ? 0.8 : 0.65;
    f.title = tiny ? fmt::format("Launch-bound: {:.0f} kernels per step, {:.0f}% under 10 µs; the GPU waits on the host {:.0f}% of the step",
                                 k.per_step, k.under_10us_pct, overhead_pct)
                   : fmt::format("Host-bound: the GPU waits {:.0f}% of the step while the CPU runs framework code ({:.0f} kernels per step)",
                                 overhead_pct, k.per_step);
  } else if (ev.lab) {
    double base = lab_rate(*ev.lab, "bf16"), comp = lab_rate(*ev.lab, "bf16+compile");
    if (base <= 0 || comp <= 0 || comp / base - 1 < th::kLabAmpGain) return std::nullopt;
    f = make("launch-bound", Bottleneck::Launch, "lab");
    add(f, "bf16_samples_per_s", base, "samples/s");
    add(f, "compile_samples_per_s", comp, "samples/s");
    add(f, "compile_gain_pct", 100 * (comp / base - 1), "%");
    f.recoverable_fraction = std::clamp(1 - base / comp, 0.0, 0.9);
    f.confidence = 0.75;
    f.title = fmt::format("Kernels not fused: torch.compile measured {:.0f}% faster", 100 * (comp / base - 1));
  } else {
    return std::nullopt;
  }
  f.severity = severity_for(f.recoverable_fraction);
  f.gain = fmt::format("the GPU idles between tiny kernels: fusing them gives {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "Each kernel launch costs the CPU 5-20 µs. When most kernels run for less than that, the GPU "
      "empties its queue and waits for the next launch: the step is bound by Python and launch "
      "overhead, not by arithmetic. Fusing element-wise chains into fewer, larger kernels (or "
      "replaying the whole step as a CUDA graph) removes the gaps; a larger batch makes every "
      "kernel longer for the same launch cost.";
  if (!tiny)
    f.explanation += " Here the kernels are not all tiny: most of the wait is the CPU's own work between launches "
                     "(Python, operator dispatch, hooks), which compiling or capturing the step removes too.";
  if (compiled) {
    f.fix = "Already compiled: capture the step with CUDA graphs (mode=\"reduce-overhead\") or raise the batch size.";
    f.fix_code = "model = torch.compile(model, mode=\"reduce-overhead\")  # CUDA graphs";
  } else {
    f.fix = "torch.compile the model (PyTorch >= 2.0); or CUDA graphs; or a larger batch per step.";
    f.fix_code = "model = torch.compile(model)  # fuses small kernels\n"
                 "# launch overhead gone entirely: torch.compile(model, mode=\"reduce-overhead\")";
  }
  f.fix_settings = {{"compile", compiled ? "reduce-overhead" : "true"}};
  point_at_fix(f, ev, "forward", "the model called here: torch.compile it where it is built", KnobFix{{{"torch_compile", "True"}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
