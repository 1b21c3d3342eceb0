// in-loop-io: checkpoints, image dumps or heavy logging written every step block the loop
// (frequent checkpointing or logging inside the loop).
// Evidence: the agent's measured I/O time (torch.save, file writes) >= 5% of the step.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> in_loop_io(const Evidence& ev) {
  const auto* a = agent_steps(ev);
  if (!a || a->io_pct < th::kIoPct) return std::nullopt;
  Finding f = make("in-loop-io", Bottleneck::Io, "agent");
  add(f, "io_pct", a->io_pct, "%");
  add(f, "io_ms_per_step", a->io_ms, "ms");
  add(f, "step_ms", a->step_ms, "ms");
  f.recoverable_fraction = std::clamp(a->io_pct / 100, 0.0, 0.95);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.9;
  f.title = fmt::format("I/O inside the loop: saving/writing takes {:.0f}% of each step", a->io_pct);
  f.gain = fmt::format("I/O is {:.0f}% of the step: doing it every N steps gives {}", a->io_pct,
                       gain_text(f.recoverable_fraction));
  f.explanation =
      "The loop writes to disk inside the step (torch.save checkpoints, sample images, per-step "
      "log files). The training stops while the file is written";
  f.explanation += agent_without_cuda(ev) ? "." : ", and a checkpoint also copies every parameter from the GPU.";
  f.fix = "Checkpoint every N steps or at epoch end; log every N steps; write images rarely.";
  f.fix_code =
      "if step % 1000 == 0:\n"
      "    torch.save(model.state_dict(), path)";
  point_at_calls(f, ev, {"io"});
  return f;
}

}  // namespace ts::diagnose::rules
