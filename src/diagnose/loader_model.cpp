#include "diagnose/loader_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "diagnose/thresholds.h"

namespace ts::diagnose {
namespace {

double cpu_share_or_one(const LoaderModelInput& in) { return in.cpu_share >= 0 ? std::min(in.cpu_share, 1.0) : 1.0; }
int loops(const LoaderModelInput& in) { return std::max(1, in.loops); }
// Cores one loop's workers can load on: each loop (a rank on this host) keeps one for itself and
// its workers share what is left with the other loops' workers.
int free_cores(const LoaderModelInput& in) {
  return in.cores > 0 ? std::max(1, (in.cores - loops(in)) / loops(in)) : 0;
}
// Loading that waits (storage, network, sleep) rather than computes; unknown counts as computing.
bool loading_waits(const LoaderModelInput& in) { return in.cpu_share >= 0 && in.cpu_share < th::kLoadingWaitsCpuShare; }

// A hand-over's cost for the batch: the fixed part, the measured rate per MiB up to the largest
// batch measured, and memory bandwidth's rate beyond it (never the fit extrapolated, thresholds.h).
double handover_cost_ms(const LoaderModelInput& in, double ms_per_mib, double beyond_ms_per_mib) {
  const double mib = std::max(0.0, in.batch_mib);
  const double measured = std::min(mib, th::kWorkerHandoverMeasuredMiB);
  return th::kWorkerHandoverMs + ms_per_mib * measured + beyond_ms_per_mib * (mib - measured);
}

}  // namespace

double loading_cpu_ms(const LoaderModelInput& in) { return in.load_ms * cpu_share_or_one(in); }

int loops_in_cpu_bound(const LoaderModelInput& in) { return in.loops > 1 && in.loop_cpu_ms > 0 ? in.loops : 1; }

double handover_ms(const LoaderModelInput& in) {
  return handover_cost_ms(in, th::kWorkerHandoverMsPerMiB, th::kWorkerHandoverBeyondMsPerMiB);
}

double worker_handover_ms(const LoaderModelInput& in) {
  return handover_cost_ms(in, in.worker_ms_per_mib > 0 ? in.worker_ms_per_mib : th::kWorkerCollateMsPerMiB,
                          th::kWorkerCollateBeyondMsPerMiB);
}

double pin_ms(const LoaderModelInput& in) { return in.pinned ? th::kPinMsPerMiB * std::max(0.0, in.batch_mib) : 0; }

// A batch every period(W): each worker loads a batch and hands it over (collating it into shared
// memory and pickling it), W at once; CPU work cannot use more cores than the main process
// leaves free.
double period_ms(const LoaderModelInput& in, int workers) {
  const double h = worker_handover_ms(in);
  double period = (in.load_ms + h) / workers;
  if (int free = free_cores(in); free > 0) period = std::max(period, (loading_cpu_ms(in) + h) / free);
  return std::max(period, pin_ms(in));
}

double cores_left(const LoaderModelInput& in, int workers) {
  if (in.cores <= 0) return 0;
  if (in.other_cores <= 0) return in.cores;
  // The scheduler shares the cores among the runnable processes (Linux CFS): the job gets what
  // other work leaves or its processes' fair share, whichever is more. Other work counts as one
  // process per core it used (rounded up past a quarter); the job as the loop plus the workers
  // that compute (waiting workers sleep; the loop's intra-op threads work in bursts).
  const double others = std::ceil(in.other_cores - 0.25);
  const double mine = loops_in_cpu_bound(in) + (loading_waits(in) ? 0 : std::max(0, workers));
  const double fair = others > 0 ? in.cores * mine / (mine + others) : in.cores;
  return std::min<double>(in.cores, std::max({in.cores - in.other_cores, fair, 0.5}));
}

double cpu_bound_step_ms(const LoaderModelInput& in, int workers) {
  // Waiting loading only: loading that computes is capped at the free cores already, and its
  // wall times, measured beside the other work, carry that contention once more.
  if (in.loop_threads <= 0 || in.cores <= 0 || !loading_waits(in)) return 0;
  // Each loop needs its own CPU per step from the same cores; counted only where measured, since
  // compute x threads would count a rank's wait in the all-reduce as CPU.
  const int loops = loops_in_cpu_bound(in);
  const double own = loops > 1 ? in.loop_cpu_ms : in.compute_ms * in.loop_threads;
  const double cpu = own + handover_ms(in) + loading_cpu_ms(in) + worker_handover_ms(in);
  return loops * cpu / cores_left(in, workers);
}

int loop_threads_with(const LoaderModelInput& in, int workers) {
  if (!in.fit_threads || in.loop_threads <= 0 || in.cores <= 0 || workers <= 0) return in.loop_threads;
  return std::clamp(in.cores - workers, 1, in.loop_threads);
}

double compute_with_ms(const LoaderModelInput& in, int workers) {
  const int t = loop_threads_with(in, workers);
  return t > 0 && t < in.loop_threads ? in.compute_ms * in.loop_threads / t : in.compute_ms;
}

double predicted_step_ms(const LoaderModelInput& in, int workers) {
  if (workers <= 0) return in.compute_ms + in.load_ms;
  // The loop's own work per batch, one after the other in the main process; the workers load the
  // next batches meanwhile, so the step is the slower of the two, not their sum.
  const double loop = compute_with_ms(in, workers) + handover_ms(in);
  return std::max({period_ms(in, workers), loop, cpu_bound_step_ms(in, workers)});
}

LoaderPlan plan_workers(const LoaderModelInput& in) {
  LoaderPlan p;
  if (in.load_ms <= 0 || in.compute_ms <= 0) return p;
  double share = cpu_share_or_one(in);
  p.waits = loading_waits(in);
  // Enough workers to feed the loop at the fastest it can go: its compute, or where the cores
  // bound it, that bound (more workers would only wait: each one more a process, and under
  // `spawn` an interpreter importing torch).
  const double fed_ms = std::max(in.compute_ms, cpu_bound_step_ms(in, 0));
  int want = static_cast<int>(std::ceil(in.load_ms / fed_ms)) + 1;
  int free = free_cores(in);
  if (p.waits) {
    // Waiting workers sleep: as many fit as the free cores can serve their CPU part
    // (free / cpu_share), up to the process ceiling.
    p.cap = th::kMaxLoaderWorkers;
    if (free > 0 && share > 0) p.cap = std::min(p.cap, std::max(1, static_cast<int>(free / share)));
    if (want > p.cap)
      p.cap_reason = p.cap == th::kMaxLoaderWorkers
                         ? fmt::format("capped at {} worker processes", th::kMaxLoaderWorkers)
                         : fmt::format("capped at {}: their CPU share fills the {} free core{}", p.cap, free,
                                       free == 1 ? "" : "s");
  } else {
    p.cap = free > 0 ? free : th::kMaxLoaderWorkers;
    if (want > p.cap)
      p.cap_reason = free > 0 ? fmt::format("capped at {} usable cores minus the main process", in.cores)
                              : fmt::format("capped at {} worker processes", th::kMaxLoaderWorkers);
  }
  p.workers = std::clamp(want, 1, p.cap);
  if (in.fit_threads && loop_threads_with(in, p.workers) < in.loop_threads) {
    // The workers would cost the loop threads: the fewest workers within 2% of the best step
    // (each one fewer leaves the loop a thread), plus the spare where it costs no more than that.
    double best = predicted_step_ms(in, 1);
    for (int w = 2; w <= p.cap; ++w) best = std::min(best, predicted_step_ms(in, w));
    for (int w = 1; w <= p.cap; ++w)
      if (predicted_step_ms(in, w) <= best * 1.02) {
        p.workers = w;
        break;
      }
    if (p.workers < p.cap && predicted_step_ms(in, p.workers + 1) <= best * 1.02) ++p.workers;
  }
  set_workers(in, p, p.workers);
  return p;
}

void set_workers(const LoaderModelInput& in, LoaderPlan& p, int workers) {
  p.workers = workers;
  const int t = loop_threads_with(in, workers);
  p.loop_threads = t < in.loop_threads ? t : 0;
  p.period_ms = period_ms(in, workers);
  p.predicted_step_ms = predicted_step_ms(in, workers);
  p.speedup = p.predicted_step_ms > 0 ? in.step_ms / p.predicted_step_ms : 1;
}

}  // namespace ts::diagnose
