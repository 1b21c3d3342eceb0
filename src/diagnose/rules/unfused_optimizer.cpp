// unfused-optimizer: the optimizer updates one parameter tensor at a time (single-tensor Adam/
// AdamW/SGD), launching several small kernels per parameter (PyTorch's pattern matcher:
// _single_tensor_adam -> foreach=True / fused=True; torch.optim's foreach / fused implementations).
// Evidence: the trace's optimizer implementation, or the agent's (with whether the installed
// PyTorch's optimizer accepts fused= / foreach=).
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> unfused_optimizer(const Evidence& ev) {
  Finding f;
  std::string opt;
  bool has_fused = true, has_foreach = true, known = false;
  const auto* t = trace_with_steps(ev);
  if (ev.agent && ev.agent->optimizer_impl == "single_tensor" && ev.agent->param_device.rfind("cuda", 0) == 0) {
    const auto& a = *ev.agent;
    f = make("unfused-optimizer", Bottleneck::Launch, "agent");
    opt = a.optimizer;
    has_fused = a.optimizer_has_fused;
    has_foreach = a.optimizer_has_foreach;
    known = true;
    if (a.step_ms > 0 && a.optimizer_ms > 0) {
      add(f, "optimizer_ms", a.optimizer_ms, "ms");
      add(f, "optimizer_pct", 100 * a.optimizer_ms / a.step_ms, "%");
      // fused/foreach typically cut the optimizer step by half or more
      f.recoverable_fraction = std::clamp(0.5 * a.optimizer_ms / a.step_ms, 0.0, 0.5);
    }
  } else if (t && t->gpu.present && t->parallel.optimizer_impl == "single_tensor") {
    f = make("unfused-optimizer", Bottleneck::Launch, "trace");
    opt = t->parallel.optimizer;
    double k = t->parallel.optimizer_kernels_per_step;
    add(f, "optimizer_kernels_per_step", k, "count");
    // A fused step is a handful of kernels; each launch saved is ~5-20 µs of host time (a CUDA
    // launch plus PyTorch's dispatch): take 10 µs.
    double step_ns = t->steps.median_step_ns > 0 ? t->steps.median_step_ns : t->steps.mean_step_ns;
    if (step_ns > 0) f.recoverable_fraction = std::clamp(std::max(0.0, k - 10) * 10e3 / step_ns, 0.0, 0.5);
    // Fewer launches only give back time the GPU spent waiting on the host (runtime + cpu_exec).
    f.recoverable_fraction =
        std::min(f.recoverable_fraction, t->steps.pct(t->steps.total.runtime + t->steps.total.cpu_exec) / 100);
  } else {
    return std::nullopt;
  }
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Low);
  f.confidence = 0.85;
  std::string name = opt.empty() ? "the optimizer" : opt;
  f.title = fmt::format("Unfused optimizer: {} updates one parameter tensor at a time", name);
  f.gain = fmt::format("one fused kernel instead of several per parameter: {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "The single-tensor optimizer loops over the parameters in Python and launches a few small "
      "kernels for each one. The foreach implementation batches them into a few multi-tensor "
      "kernels, and fused=True does the whole update in one kernel per parameter group.";
  std::string cls = opt.empty() ? "AdamW" : opt;
  if (!known) {
    // From a trace alone the PyTorch version is unknown: Adam/AdamW have fused= from 2.0, SGD from 2.4.
    bool adam = cls.find("Adam") != std::string::npos;
    f.fix = adam ? fmt::format("torch.optim.{}(..., fused=True) on PyTorch >= 2.0; foreach=True before that.", cls)
                 : fmt::format("torch.optim.{}(..., foreach=True) (the default on CUDA since 2.0; fused=True from 2.4).", cls);
    f.fix_code = fmt::format("opt = torch.optim.{}(model.parameters(), lr=lr, {}=True)", cls, adam ? "fused" : "foreach");
    f.fix_settings = {{adam ? "optimizer.fused" : "optimizer.foreach", "true"}};
    return f;
  }
  if (has_fused) {
    f.fix = fmt::format("torch.optim.{}(..., fused=True){}", cls,
                        known ? "" : " (PyTorch >= 2.0; on older versions foreach=True)");
    f.fix_code = fmt::format("opt = torch.optim.{}(model.parameters(), lr=lr, fused=True)", cls);
    f.fix_settings = {{"optimizer.fused", "true"}};
  } else if (has_foreach) {
    f.fix = fmt::format("The installed PyTorch's {} has no fused=: use foreach=True.", cls);
    f.fix_code = fmt::format("opt = torch.optim.{}(model.parameters(), lr=lr, foreach=True)", cls);
    f.fix_settings = {{"optimizer.foreach", "true"}};
  } else {
    f.fix = "Upgrade PyTorch (>= 2.0) for foreach/fused optimizers.";
    f.fix_code = "pip install -U torch";
  }
  return f;
}

}  // namespace ts::diagnose::rules
