// anomaly-detection: autograd anomaly mode left on in training (torch.autograd.set_detect_anomaly(True),
// detect_anomaly(), Lightning's Trainer(detect_anomaly=True)). Each node the forward creates stores
// the formatted Python stack, and with check_nan the backward tests each gradient for NaN (on a GPU
// a synchronisation per node). PyTorch's docs (torch.autograd.detect_anomaly): "This mode should
// be enabled only for debugging as the different tests will slow down your program execution."
// Evidence: the agent found it on in a training step and measured three steps (anomaly.py): PyTorch's
// stack captures, timed as they ran (the quickest step), and the NaN tests: the step's gradients x a
// test's fixed cost + their elements x its cost per element (both timed on CPU tensors).
// Gain: the step less that cost. On a GPU each NaN test also synchronises with the device, which
// is not in it: the gain there is a floor; `verify` measures the fix.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> anomaly_detection(const Evidence& ev) {
  if (!ev.agent || !ev.agent->anomaly) return std::nullopt;
  const auto& a = *ev.agent;
  const double cost = a.anomaly->cost_ms();
  const double step = a.step_ms;
  if (cost < 0 || step <= 0) return std::nullopt;  // on, but not measured: no figure to stand on
  const double back = std::min(cost, step);  // what turning it off gives back, per step
  const double pct = 100 * back / step;
  if (pct < th::kAnomalyMinPct) return std::nullopt;
  Finding f = make("anomaly-detection", Bottleneck::HostCpu, "agent");
  const auto& an = *a.anomaly;
  add(f, "anomaly_ms_per_step", back, "ms");
  add(f, "anomaly_pct_of_step", pct, "%");
  add(f, "stack_captures_per_step", static_cast<double>(an.captures_per_step), "count");
  add(f, "stack_capture_ms_per_step", an.capture_ns_per_step / 1e6, "ms");
  if (an.check_nan) {
    add(f, "nan_test_ms_per_step", an.nan_ms(), "ms");
    add(f, "gradient_elements_tested", static_cast<double>(an.grad_elems_per_step), "count");
  }
  add(f, "step_ms", step, "ms");
  f.recoverable_fraction = std::clamp(back / step, 0.0, 0.9);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.9;
  f.title = fmt::format("Autograd anomaly detection is on: {:.0f}% of each step goes to its checks", pct);
  f.gain = fmt::format("turning it off gives back {:.1f} of {:.1f} ms per step: {}", back, step,
                       gain_text(f.recoverable_fraction));
  f.explanation = fmt::format(
      "Anomaly detection (torch.autograd.set_detect_anomaly / detect_anomaly) makes every operation of the "
      "forward store the formatted Python stack that created it{}. Measured in one step here: {} stack "
      "captures, {:.1f} ms{}. PyTorch's documentation: \"This mode should be enabled only for debugging as the "
      "different tests will slow down your program execution.\"{}",
      an.check_nan ? ", and makes the backward test every gradient for NaN" : "", an.captures_per_step,
      an.capture_ns_per_step / 1e6,
      an.check_nan ? fmt::format(", and {:.1f} ms of NaN tests ({} gradients of {} nodes, {:.2g} elements)",
                                 an.nan_ms(), an.grad_tests_per_step, an.nodes_per_step,
                                 static_cast<double>(an.grad_elems_per_step))
                   : "",
      an.check_nan && a.param_device.rfind("cuda", 0) == 0
          ? " On a GPU each NaN test waits for the GPU, which the CPU-timed tests here leave out: the gain there "
            "is larger."
          : "");
  f.fix = "Turn anomaly detection off outside debugging: delete torch.autograd.set_detect_anomaly(True) (or the "
          "detect_anomaly() block), or enable it only in a debugging run; Lightning: Trainer(detect_anomaly=False).";
  f.fix_code = "torch.autograd.set_detect_anomaly(False)   # debugging only";
  f.fix_settings = {{"autograd.detect_anomaly", "false"}};
  if (const CodeSite* cfg = config_site(ev, "lightning"); cfg && cfg->knob_on("detect_anomaly"))
    f.sites.push_back(site_ref(*cfg, "detect_anomaly=False"));  // Trainer(detect_anomaly=True)
  else
    point_at(f, ev, "anomaly", "anomaly detection turned on here");
  return f;
}

}  // namespace ts::diagnose::rules
