// nonfinite-loss: the loss became NaN or Inf (torch.autograd.detect_anomaly
// finds the operation that produced it). Evidence: the agent's count of non-finite losses.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> nonfinite_loss(const Evidence& ev) {
  if (!ev.agent || ev.agent->nonfinite_losses <= 0) return std::nullopt;
  Finding f = make("nonfinite-loss", Bottleneck::Health, "agent");
  add(f, "nonfinite_losses", ev.agent->nonfinite_losses, "count");
  add(f, "steps", ev.agent->steps, "count");
  f.severity = Severity::Critical;
  f.confidence = 0.95;
  f.recoverable_fraction = 0;
  f.title = fmt::format("Loss is NaN/Inf in {} of {} steps", ev.agent->nonfinite_losses, ev.agent->steps);
  f.gain = "a diverged run wastes every step after it";
  f.explanation =
      "The loss became NaN or infinite: the training diverged (learning rate too high, bad "
      "initialisation, an unbounded activation, a log/div of zero, or fp16 overflow without a "
      "GradScaler). Gradient clipping hides it; detect_anomaly finds the operation that produced it.";
  f.fix = "Find the op with torch.autograd.detect_anomaly() (slow: only while debugging), then lower "
          "the LR, clip gradients, or use bf16 instead of fp16.";
  f.fix_code =
      "with torch.autograd.detect_anomaly():   # roughly doubles backward time\n"
      "    loss.backward()\n"
      "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)";
  return f;
}

}  // namespace ts::diagnose::rules
