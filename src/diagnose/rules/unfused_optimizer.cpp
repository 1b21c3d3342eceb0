// unfused-optimizer: the optimizer updates one parameter tensor at a time (single-tensor Adam/
// AdamW/SGD), launching several small kernels per parameter (PyTorch's pattern matcher:
// _single_tensor_adam -> foreach=True / fused=True; torch.optim's foreach / fused implementations).
// Evidence: the trace's optimizer implementation, or the agent's (with whether the installed
// PyTorch's optimizer accepts fused= / foreach=).
// Gain: the step time the fused update removes. The single-tensor loop's time is host time
// (Python, dispatch, a launch per op per parameter) with the GPU idle meanwhile; the fused update
// keeps only its kernels' work. From a trace with an idle attribution: the GPU idle charged to
// the optimizer (cause "optimizer"). From the agent: the optimizer's measured time less what its
// kernels run now (an upper bound for the fused kernels, which do the same arithmetic in fewer
// passes), or less kFusedOptimizerKeeps of it without a trace.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

namespace {

// On the CPU (PyTorch >= 2.4): the single-tensor update runs each of its operations as a pass over
// each parameter's memory, the fused kernel makes one. Premise: the agent measured the optimizer's
// time, fused=True runs on the parameters' device (PyTorch's own list of such devices), and the
// update is one of several passes, each measured against the fused kernel
// (bench/run/fused_optimizer_cpu.py): Adam and AdamW (a dozen operations per parameter), Adagrad,
// and SGD with momentum (the buffer's scaling and sum, then the step). Plain SGD's update is one
// operation already (examples/checkpoint_every_step.py's SGD: 0.30 ms single-tensor, 0.29 ms fused).
struct CpuUpdate {
  double keeps;       // the fused update's share of the single-tensor one's time
  const char* passes;  // what the single-tensor update does, one pass each
};

std::optional<CpuUpdate> cpu_update(const AgentEvidence& a) {
  if (a.optimizer == "Adam" || a.optimizer == "AdamW")
    return CpuUpdate{th::kFusedOptimizerKeepsCpu,
                     "weight decay, the two moment updates, the square root, the division, the step"};
  if (a.optimizer == "Adagrad")
    return CpuUpdate{th::kFusedAdagradKeepsCpu, "the squared gradients' sum, its square root, the division, the step"};
  if (a.optimizer == "SGD" && a.optimizer_momentum > 0)
    return a.optimizer_weight_decay > 0
               ? CpuUpdate{th::kFusedSgdMomentumDecayKeepsCpu,
                           "weight decay into a new gradient, the momentum buffer's scaling and sum, the step"}
               : CpuUpdate{th::kFusedSgdMomentumKeepsCpu, "the momentum buffer's scaling and sum, the step"};
  return std::nullopt;
}

std::optional<Finding> on_cpu(const AgentEvidence& a, const Evidence& ev) {
  const auto update = cpu_update(a);
  if (!update) return std::nullopt;
  if (!a.optimizer_fused_on_device || a.step_ms <= 0 || a.optimizer_ms <= 0) return std::nullopt;
  const double pct = 100 * a.optimizer_ms / a.step_ms;
  if (pct < th::kOptimizerCpuPct || a.optimizer_ms < th::kOptimizerCpuMinMs) return std::nullopt;
  Finding f = make("unfused-optimizer", Bottleneck::Compute, "agent");
  const double keeps = update->keeps * a.optimizer_ms;
  add(f, "optimizer_ms", a.optimizer_ms, "ms");
  add(f, "optimizer_pct", pct, "%");
  add(f, "fused_update_ms", keeps, "ms");
  f.recoverable_fraction = std::clamp((a.optimizer_ms - keeps) / a.step_ms, 0.0, 0.9);
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Low);
  f.confidence = 0.8;
  const std::string& cls = a.optimizer;
  f.title = fmt::format("Unfused optimizer: {} updates one parameter tensor at a time, {:.0f}% of the step on the CPU",
                        cls, pct);
  f.gain = fmt::format("one fused pass over each parameter: {}", gain_text(f.recoverable_fraction));
  f.explanation = fmt::format(
      "The single-tensor {} update runs its operations one after another for each parameter ({}), each a "
      "pass over the parameter's memory. PyTorch 2.4 added fused CPU kernels for Adam, AdamW, SGD and Adagrad "
      "(torch.optim docs, \"Algorithms\": fused implementations), which do the whole update in one pass: here "
      "the step spends {:.3g} ms of {:.3g} in the optimizer, and the fused update keeps about {:.0f}% of it.",
      cls, update->passes, a.optimizer_ms, a.step_ms, 100 * update->keeps);
  f.fix = fmt::format("torch.optim.{}(..., fused=True): the fused CPU kernel (PyTorch >= 2.4).", cls);
  // SGD's template keeps the momentum and weight decay the run used: copied without them, it would
  // be plain SGD, another optimizer.
  std::string keep;
  if (cls == "SGD") {
    if (a.optimizer_momentum > 0) keep += fmt::format("momentum={:g}, ", a.optimizer_momentum);
    if (a.optimizer_weight_decay > 0) keep += fmt::format("weight_decay={:g}, ", a.optimizer_weight_decay);
  }
  f.fix_code = fmt::format("opt = torch.optim.{}(model.parameters(), lr=lr, {}fused=True)", cls, keep);
  f.fix_settings = {{"optimizer.fused", "true"}};
  point_at_fix(f, ev, "optimizer", "the optimizer is built here", KnobFix{{{"optim", "\"adamw_torch_fused\""}}, ""});
  return f;
}

}  // namespace

std::optional<Finding> unfused_optimizer(const Evidence& ev) {
  Finding f;
  std::string opt;
  bool has_fused = true, has_foreach = true, known = false;
  const auto* t = trace_with_steps(ev);
  if (ev.agent && ev.agent->optimizer_impl == "single_tensor" && ev.agent->param_device == "cpu")
    return agent_steps(ev) ? on_cpu(*ev.agent, ev) : std::nullopt;  // its share of a steady step
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
      double keeps = th::kFusedOptimizerKeeps * a.optimizer_ms;
      if (t && t->gpu.present && t->parallel.optimizer_kernels_per_step > 0 && t->kernels.median_ns > 0)
        keeps = std::min(a.optimizer_ms, t->parallel.optimizer_kernels_per_step * t->kernels.median_ns / 1e6);
      add(f, "fused_update_ms", keeps, "ms");
      f.recoverable_fraction = std::clamp((a.optimizer_ms - keeps) / a.step_ms, 0.0, 0.9);
    }
  } else if (t && t->gpu.present && t->parallel.optimizer_impl == "single_tensor") {
    f = make("unfused-optimizer", Bottleneck::Launch, "trace");
    opt = t->parallel.optimizer;
    double k = t->parallel.optimizer_kernels_per_step;
    add(f, "optimizer_kernels_per_step", k, "count");
    // A fused step is a handful of kernels; each launch saved is ~5-20 µs of host time (a CUDA
    // launch plus PyTorch's dispatch): take 10 µs.
    double step_ns = t->steps.median_step_ns > 0 ? t->steps.median_step_ns : t->steps.mean_step_ns;
    if (const auto* a = idle_attribution(ev); a && a->cause_ns(analysis::IdleCause::Optimizer) > 0) {
      // The GPU idled this long while the host ran the optimizer: what the fused update gives back.
      const double idle_ns = a->cause_ns(analysis::IdleCause::Optimizer);
      add(f, "optimizer_idle_ms_per_step", idle_ns / std::max<size_t>(1, t->steps.steps.size()) / 1e6, "ms");
      f.recoverable_fraction = std::clamp(idle_ns / t->steps.total_ns, 0.0, 0.9);
    } else {
      if (step_ns > 0) f.recoverable_fraction = std::clamp(std::max(0.0, k - 10) * 10e3 / step_ns, 0.0, 0.5);
      // Fewer launches only give back time the GPU spent waiting on the host (runtime + cpu_exec).
      f.recoverable_fraction =
          std::min(f.recoverable_fraction, t->steps.pct(t->steps.total.runtime + t->steps.total.cpu_exec) / 100);
    }
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
    point_at_fix(f, ev, "optimizer", "the optimizer is built here", KnobFix{{{"optim", "\"adamw_torch_fused\""}}, ""});
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
  point_at_fix(f, ev, "optimizer", "the optimizer is built here", KnobFix{{{"optim", "\"adamw_torch_fused\""}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
