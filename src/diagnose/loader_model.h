#pragma once
// The DataLoader model behind dataloader-starvation's worker count and predicted gain
// (docs/FINDINGS.md, "Sizing num_workers"). With W worker processes the loop gets a batch every
//   period(W) = max((load + worker hand-over) / W, (load x cpu_share + worker hand-over) / free_cores,
//                   pin)
// (W batches load at once, each handed over by its worker; loading that computes cannot use more
// cores than the main process leaves free; pinned batches pass one by one through the pin-memory
// thread), and a step takes
//   step(W) = max(period(W), compute + hand-over)   (W >= 1)
//   step(0) = compute + load                         (loading inside the loop)
// The loop runs at the slower of the workers' delivery and its own work per batch: its compute
// and its part of the hand-over, which follow each other in the main process, while the next
// batches load in the workers meanwhile. Where the loop computes on the CPU and the loading
// waits, the step also cannot beat the job's CPU per step over the cores other work leaves it:
//   step(W) >= (compute x intra-op threads + hand-over + load x cpu_share + worker hand-over)
//              / cores_left(W)
// where cores_left is what the other work used during the run leaves, or the job's fair share
// among the runnable processes (more computing workers get more of a contended host)
// (the loop's intra-op threads hold their cores while it computes; each batch costs its worker
// its CPU part and its own hand-over). On a quiet host the period is the larger. Loading
// that computes is not bounded so: its wall times, measured beside the other work, carry the
// contention already (beside two busy loops the bound predicted 0.94x where 1.17x was measured).
// Loading that waits (storage, network, sleep: CPU time well below wall time) is sized past the
// cores; loading that computes is capped at the cores the main process leaves.
// Fitting the loop's threads (fit_threads): where the loop computes on the CPU and loading that
// computes was measured inside it (num_workers=0), nothing of the loop ran beside the loading, and
// a computing worker takes a core from the loop's intra-op threads. Oversubscribed, those threads
// wait at every barrier for the one that lost its core (pytorch/examples vae on 2 cores, 2 intra-op
// threads: 1 worker measured 36.6-41.2 ms per step against 28.7-37.8 ms without, its compute 11 ->
// 24 ms). So the fix also sets the loop's threads to what the workers leave,
//   threads(W) = min(loop_threads, cores - W),  compute(W) = compute x loop_threads / threads(W)
// (as if the threads scaled perfectly: fewer of them cannot compute faster than that); where the
// usual count would cost the loop threads, W is the fewest workers whose step is within 2% of the
// best, plus the spare where it costs no more than that.
#include <string>

namespace ts::diagnose {

struct LoaderModelInput {
  double step_ms = 0;        // the step now (median)
  double compute_ms = 0;     // the consumer's time per step: GPU step, else the loop's compute
  double load_ms = 0;        // one batch loaded in one process: wall time (samples x getitem + collate)
  double cpu_share = -1;     // loading's CPU time / its wall time (0-1); -1 unknown: taken as computing
  int cores = 0;             // usable cores; 0 unknown (no CPU limit)
  int current_workers = 0;   // the DataLoader's num_workers now
  double batch_mib = 0;      // the batch's tensors (MiB); 0 unknown: the fixed hand-over only
  // The CPU path's terms (0: the loop computes on a GPU, or unknown): the loop's intra-op threads,
  // and the cores other work kept busy during the run (rule.h other_work_cores).
  int loop_threads = 0;
  double other_cores = 0;
  // Batches go through pin_memory (the fix for a loop that copies them to a GPU): the pin-memory
  // thread copies each one, one after another (thresholds.h kPinMsPerMiB).
  bool pinned = false;
  // The worker's per-MiB hand-over measured on this host (fresh shared memory's faults and
  // zeroing, sample/shm_fault_cost.h); 0: the build VM's kWorkerCollateMsPerMiB.
  double worker_ms_per_mib = 0;
  // The loop's threads are set to fit beside the workers (above): the CPU path, loading that
  // computes, measured in the loop.
  bool fit_threads = false;
  // The training loops that share these cores, each with its own loader and workers: the ranks a
  // launcher started on this host. Each keeps a core for itself, and their computing workers share
  // the rest. The CPU bound counts them all where each loop's own CPU per step was measured
  // (loop_cpu_ms): a rank's compute time holds its wait for the other ranks in the all-reduce,
  // which is not CPU (docs/FINDINGS.md, "Ranks on one host").
  int loops = 1;
  // One loop's CPU time per step outside its loading: its process's CPU clock per steady step
  // (every thread, the all-reduce's included), less the loading it did itself. 0: not measured;
  // the bound then counts one loop, compute x intra-op threads.
  double loop_cpu_ms = 0;
};

struct LoaderPlan {
  int workers = -1;          // recommended num_workers
  bool waits = false;        // loading mostly waits (cpu_share below th::kLoadingWaitsCpuShare)
  int cap = 0;               // the most workers that help (0: none)
  std::string cap_reason;    // why the cap, "" when not reached
  double period_ms = 0;      // a batch every period_ms with `workers`
  double predicted_step_ms = 0;
  double speedup = 1;        // step_ms / predicted_step_ms
  int loop_threads = 0;      // the loop's intra-op threads the fix sets (0: left as they are)
};

// One batch's loading CPU time: its wall time x its CPU share (unknown: all of it).
double loading_cpu_ms(const LoaderModelInput& in);
// The loops the CPU bound counts: every one on the host where each one's own CPU per step was
// measured (loop_cpu_ms), else 1.
int loops_in_cpu_bound(const LoaderModelInput& in);
// A batch every this many ms with `workers` worker processes (>= 1).
double period_ms(const LoaderModelInput& in, int workers);
// The step predicted with `workers` worker processes (0: loading in the loop).
double predicted_step_ms(const LoaderModelInput& in, int workers);
// What handing one batch from a worker to the loop costs the loop: a fixed part plus a part per
// MiB of the batch (thresholds.h, kWorkerHandoverMs and kWorkerHandoverMsPerMiB).
double handover_ms(const LoaderModelInput& in);
// The cores the job gets with `workers` beside the other work: what that work left, or the job's
// fair share of the cores among the runnable processes, whichever is more (0 unknown).
double cores_left(const LoaderModelInput& in, int workers);
// What pinning one batch costs the pin-memory thread (0 when not pinned or its size unknown):
// the period cannot be shorter.
double pin_ms(const LoaderModelInput& in);
// What handing one batch over costs its worker: the fixed part, and per MiB collating it into
// shared memory (kWorkerCollateMsPerMiB), which the loop's measured collate does not hold.
double worker_handover_ms(const LoaderModelInput& in);
// The job's CPU per fed step over the cores left to it (the CPU path's bound above); 0 when the
// loop computes on a GPU or the cores are unknown.
double cpu_bound_step_ms(const LoaderModelInput& in, int workers);
// The loop's intra-op threads with `workers` beside it: fewer where they are fitted (above), else
// the loop's own (0 unknown).
int loop_threads_with(const LoaderModelInput& in, int workers);
// The loop's compute per step with `workers` beside it: longer where its threads are fitted.
double compute_with_ms(const LoaderModelInput& in, int workers);
// The recommended worker count: enough to deliver a batch per compute step, plus one spare for
// jitter, within the cap; and its predicted step and speedup.
LoaderPlan plan_workers(const LoaderModelInput& in);
// The plan's figures (threads, period, step, speedup) with `workers`: the model's own choice, or
// the count a DataLoader sweep measured.
void set_workers(const LoaderModelInput& in, LoaderPlan& p, int workers);

}  // namespace ts::diagnose
