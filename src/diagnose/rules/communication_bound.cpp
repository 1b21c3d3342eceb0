// communication-bound: collective communication (NCCL all-reduce/all-gather) that compute does
// not hide takes a large share of the step (TB plugin: communication > 10% of step ->
// gradient accumulation / larger batch; HTA comm/comp overlap).
// Evidence: the trace's breakdown class "communication" (comm with no kernel running) >= 10%.
// With per-rank evidence, the rank's wait for a straggler (RanksEvidence wait_ms) is taken out first.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> communication_bound(const Evidence& ev) {
  const auto* t = trace_with_steps(ev);
  if (!t) return std::nullopt;
  double pct = t->steps.pct(t->steps.total.communication);
  // In a job with a straggler, this rank's time in collectives is mostly waiting for it (the
  // straggler-rank finding's cost, not communication's): count only what is left.
  double wait_pct = 0;
  if (ev.ranks) {
    int self = ev.agent ? ev.agent->rank : t->parallel.rank;
    for (const auto& r : ev.ranks->ranks)
      if (r.rank == self && r.step_ms > 0) wait_pct = std::min(pct, 100.0 * r.wait_ms / r.step_ms);
  }
  pct -= wait_pct;
  if (pct < th::kCommPct) return std::nullopt;
  const auto& p = t->parallel;
  Finding f = make("communication-bound", Bottleneck::Communication, "trace");
  add(f, "communication_pct_of_step", pct, "%");
  if (wait_pct > 0) add(f, "straggler_wait_pct_of_step", wait_pct, "%");
  if (t->gpu.present) {
    add(f, "comm_pct_of_gpu", p.comm_pct_of_gpu, "%");
    add(f, "comm_overlap_pct", p.comm_overlap_pct, "%");
  }
  if (p.world_size > 0) add(f, "world_size", p.world_size, "count");
  f.recoverable_fraction = std::clamp(pct / 100, 0.0, 0.9);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.85;
  f.title = t->gpu.present ? fmt::format("Communication-bound: exposed collectives take {:.0f}% of each step ({:.0f}% overlapped)",
                                         pct, p.comm_overlap_pct)
                           : fmt::format("Communication-bound: collectives take {:.0f}% of each step", pct);
  if (wait_pct > 0) f.title += fmt::format(" (besides {:.0f}% waiting for a straggler rank)", wait_pct);
  f.gain = fmt::format("communication not hidden by compute: overlapping or amortising it gives {}",
                       gain_text(f.recoverable_fraction));
  f.explanation = std::string(t->gpu.present ? "The GPUs wait" : "The ranks wait") +
      " for gradient all-reduce (or all-gather) with no compute running alongside. "
      "Fewer synchronisations per sample (gradient accumulation with no_sync, a larger batch), "
      "better overlap (DDP bucket sizes, gradient_as_bucket_view) or less data per sync (bf16 "
      "gradients) reduce the exposed time.";
  // On the CPU the collectives run on the ranks' own cores: queued threads stretch them too.
  if (!t->gpu.present && ev.samples && ev.samples->threads_oversubscribed)
    f.explanation += " The ranks' threads were measured queueing for the cores (thread-oversubscription), and gloo's "
                     "threads queue with them: part of the collectives' time is that wait, so measure again after "
                     "giving each rank its share of the threads.";
  f.fix = "Accumulate gradients over K micro-batches with model.no_sync() (one all-reduce per K), "
          "or raise the batch; tune DDP bucket_cap_mb; compress gradients to bf16.";
  f.fix_code =
      "for i, (xb, yb) in enumerate(loader):\n"
      "    ctx = model.no_sync() if (i + 1) % K else contextlib.nullcontext()\n"
      "    with ctx:\n"
      "        (loss_fn(model(xb), yb) / K).backward()\n"
      "    if (i + 1) % K == 0:\n"
      "        opt.step(); opt.zero_grad(set_to_none=True)";
  return f;
}

}  // namespace ts::diagnose::rules
