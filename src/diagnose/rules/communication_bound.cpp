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

namespace {

// What the data-parallel API the model uses synchronises, and its own knobs for fewer or hidden
// synchronisations: DDP's (the default), FSDP1's, and FSDP2's (fully_shard has no no_sync;
// set_requires_gradient_sync is it: torch.distributed.fsdp.FSDPModule's methods).
struct DataParallelApi {
  const char* explanation;
  const char* fix;
  const char* fix_code;
  const char* step_note;  // at the loop's model call: where the fewer synchronisations go
};

const char* const kNoSyncCode =
    "for i, (xb, yb) in enumerate(loader):\n"
    "    ctx = model.no_sync() if (i + 1) % K else contextlib.nullcontext()\n"
    "    with ctx:\n"
    "        (loss_fn(model(xb), yb) / K).backward()\n"
    "    if (i + 1) % K == 0:\n"
    "        opt.step(); opt.zero_grad(set_to_none=True)";

const DataParallelApi& api_of(const std::string& sharding) {
  static const DataParallelApi ddp{
      "Fewer synchronisations per sample (gradient accumulation with no_sync, a larger batch), better overlap (DDP "
      "bucket sizes, gradient_as_bucket_view) or less data per sync (bf16 gradients) reduce the exposed time.",
      "Accumulate gradients over K micro-batches with model.no_sync() (one all-reduce per K), or raise the batch; "
      "tune DDP bucket_cap_mb; compress gradients to bf16.",
      kNoSyncCode,
      "the step's model call: run it and its backward under model.no_sync() on all but every K-th micro-batch"};
  static const DataParallelApi fsdp{
      "The model is wrapped in FSDP (FullyShardedDataParallel): parameters are all-gathered before each unit's "
      "forward and backward and gradients reduce-scattered after. Fewer synchronisations per sample (gradient "
      "accumulation under no_sync, a larger batch) or prefetching (forward_prefetch, backward_prefetch) reduce the "
      "exposed time.",
      "Accumulate gradients over K micro-batches under model.no_sync() (one reduce-scatter per K; the unsharded "
      "gradients stay in memory meanwhile), or raise the batch; FSDP(..., forward_prefetch=True, "
      "backward_prefetch=BackwardPrefetch.BACKWARD_PRE).",
      kNoSyncCode,
      "the step's model call: run it and its backward under model.no_sync() on all but every K-th micro-batch"};
  static const DataParallelApi fsdp2{
      "The model is sharded with FSDP2 (fully_shard): each layer's parameters are all-gathered before its forward "
      "and backward and its gradients reduce-scattered after. Fewer synchronisations per sample (gradient "
      "accumulation without gradient sync, a larger batch), prefetching the next layers' all-gathers, or keeping "
      "the root's parameters unsharded after forward reduce the exposed time.",
      "Accumulate gradients over K micro-batches with model.set_requires_gradient_sync(False) on all but the last "
      "(one reduce-scatter per K), or raise the batch; prefetch with set_modules_to_forward_prefetch / "
      "set_modules_to_backward_prefetch; fully_shard(model, reshard_after_forward=False) for the root.",
      "for i, (xb, yb) in enumerate(loader):\n"
      "    model.set_requires_gradient_sync((i + 1) % K == 0)  # reduce-scatter on the last micro-batch only\n"
      "    (loss_fn(model(xb), yb) / K).backward()\n"
      "    if (i + 1) % K == 0:\n"
      "        opt.step(); opt.zero_grad(set_to_none=True)",
      "the step's model call: model.set_requires_gradient_sync(False) before it on all but every K-th micro-batch"};
  return sharding == "fsdp2" ? fsdp2 : sharding == "fsdp" ? fsdp : ddp;
}

}  // namespace

std::optional<Finding> communication_bound(const Evidence& ev) {
  const auto* t = trace_with_steps(ev);
  if (!t) return std::nullopt;
  double pct = t->steps.pct(t->steps.total.communication);
  // In a job with a straggler, this rank's time in collectives is mostly waiting for it (the
  // straggler-rank finding's cost, not communication's): count only what is left. A gap under the
  // straggler's bar is no one else's: fewer synchronisations wait for the slower rank less often,
  // so that wait stays communication's (ddp_trainer_class on 1.13 beside a compiling test: one
  // rank slowed below the bar, its peer's wait taken out, and neither finding claimed the 44%).
  double wait_pct = 0;
  if (ev.ranks && ev.ranks->straggler_rank >= 0) {
    int self = ev.agent ? ev.agent->rank : t->parallel.rank;
    for (const auto& r : ev.ranks->ranks)
      if (r.rank == self && r.step_ms > 0) wait_pct = std::min(pct, 100.0 * r.wait_ms / r.step_ms);
  }
  pct -= wait_pct;
  if (pct < th::kCommPct) return std::nullopt;
  // On a CPU-only run the cores are the device. With the job's own processes keeping them busy
  // (their steady CPU at >= 85% of the usable cores, the saturation bar), a rank waiting in a
  // collective is a rank whose core its peers' compute or its loader workers hold: fewer
  // synchronisations give back at most the share the job leaves idle (plus the collectives' own CPU
  // work, which a CPU trace does not separate from the wait). pytorch/examples' minGPT-ddp on 2
  // cores (the job at 92%): collectives 16% of the step, no_sync over 4 micro-batches measured
  // 1.04x. Below the bar the share stands (2.4x measured against 1.3-1.6x predicted on the DDP
  // tutorial's multigpu_torchrun, the job at 68%; 2.4x against 2.2x on ddp_trainer_class at 69%).
  // Other work on the host is contention (thread-oversubscription, the report's warning), not this.
  double job_busy_pct = -1, idle_pct = -1;
  if (const double cores = usable_cores(ev);
      !t->gpu.present && ev.samples && ev.samples->process_tree_cpu_mean_pct >= 0 && cores > 0)
    job_busy_pct = std::min(100.0, ev.samples->process_tree_cpu_mean_pct / cores);
  if (job_busy_pct >= th::kCpuSaturatedPct) idle_pct = 100.0 - job_busy_pct;
  const double recoverable_pct = idle_pct >= 0 ? std::min(pct, idle_pct) : pct;
  const auto& p = t->parallel;
  Finding f = make("communication-bound", Bottleneck::Communication, "trace");
  add(f, "communication_pct_of_step", pct, "%");
  if (wait_pct > 0) add(f, "straggler_wait_pct_of_step", wait_pct, "%");
  if (t->gpu.present) {
    add(f, "comm_pct_of_gpu", p.comm_pct_of_gpu, "%");
    add(f, "comm_overlap_pct", p.comm_overlap_pct, "%");
  }
  if (p.world_size > 0) add(f, "world_size", p.world_size, "count");
  if (idle_pct >= 0) add(f, "job_cpu_pct_of_cores", job_busy_pct, "%");
  f.recoverable_fraction = std::clamp(recoverable_pct / 100, 0.0, 0.9);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.85;
  f.title = t->gpu.present ? fmt::format("Communication-bound: exposed collectives take {:.0f}% of each step ({:.0f}% overlapped)",
                                         pct, p.comm_overlap_pct)
                           : fmt::format("Communication-bound: collectives take {:.0f}% of each step", pct);
  if (wait_pct > 0) f.title += fmt::format(" (besides {:.0f}% waiting for a straggler rank)", wait_pct);
  f.gain = idle_pct >= 0
               ? fmt::format("the job keeps the cores {:.0f}% busy: fewer synchronisations give back the share it "
                             "leaves idle at most, {}",
                             job_busy_pct, gain_text(f.recoverable_fraction))
               : fmt::format("communication not hidden by compute: overlapping or amortising it gives {}",
                             gain_text(f.recoverable_fraction));
  const DataParallelApi& api = api_of(ev.agent ? ev.agent->sharding : "");
  f.explanation = std::string(t->gpu.present ? "The GPUs wait" : "The ranks wait") +
                  " for gradient all-reduce (or all-gather) with no compute running alongside. " + api.explanation;
  // On the CPU the collectives run on the ranks' own cores: queued threads stretch them too.
  if (!t->gpu.present && ev.samples && ev.samples->threads_oversubscribed)
    f.explanation += " The ranks' threads were measured queueing for the cores (thread-oversubscription), and gloo's "
                     "threads queue with them: part of the collectives' time is that wait, so measure again after "
                     "giving each rank its share of the threads.";
  if (idle_pct >= 0)
    f.explanation += fmt::format(
        " Here the job's processes kept the cores {:.0f}% busy over the steady steps: while a rank waits, its core "
        "runs the other ranks' compute or the loader workers, so removing the wait frees little time; the gain "
        "counts the idle {:.0f}% (plus the collectives' own CPU work, which a CPU trace does not separate from the "
        "wait).",
        job_busy_pct, idle_pct);
  f.fix = api.fix;
  f.fix_code = api.fix_code;
  // The user's lines: the step's model call (where the accumulation goes) or the framework's knob
  // for it, and DDP's construction (its bucket arguments).
  point_at_fix(f, ev, "forward", api.step_note,
               KnobFix{{{"gradient_accumulation_steps", "K"}}, "the Trainer syncs gradients on the K-th micro-batch only"},
               KnobFix{{{"accumulate_grad_batches", "K"}}, "Lightning syncs gradients on the K-th micro-batch only"});
  point_at(f, ev, "ddp", "DDP(..., bucket_cap_mb=..., gradient_as_bucket_view=True): its bucket arguments");
  return f;
}

}  // namespace ts::diagnose::rules
