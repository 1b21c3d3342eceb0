#include "diagnose/loader_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "diagnose/thresholds.h"

namespace ts::diagnose {
namespace {

double cpu_share_or_one(const LoaderModelInput& in) { return in.cpu_share >= 0 ? std::min(in.cpu_share, 1.0) : 1.0; }
// Cores the workers can load on: the main process keeps one for the loop.
int free_cores(const LoaderModelInput& in) { return in.cores > 0 ? std::max(1, in.cores - 1) : 0; }

}  // namespace

double handover_ms(const LoaderModelInput& in) {
  // The measured slope up to the largest batch measured, memory bandwidth beyond it (thresholds.h).
  const double mib = std::max(0.0, in.batch_mib);
  const double measured = std::min(mib, th::kWorkerHandoverMeasuredMiB);
  return th::kWorkerHandoverMs + th::kWorkerHandoverMsPerMiB * measured +
         th::kWorkerHandoverBeyondMsPerMiB * (mib - measured);
}

// A batch every period(W): each worker loads a batch and hands it over (pickling it and moving its
// storages into shared memory, the mirror of the loop's part: the same cost taken), W at once;
// CPU work cannot use more cores than the main process leaves free.
double period_ms(const LoaderModelInput& in, int workers) {
  const double h = handover_ms(in);
  double period = (in.load_ms + h) / workers;
  if (int free = free_cores(in); free > 0) period = std::max(period, (in.load_ms * cpu_share_or_one(in) + h) / free);
  return period;
}

double cpu_bound_step_ms(const LoaderModelInput& in) {
  if (in.loop_threads <= 0 || in.cores <= 0) return 0;
  const double h = handover_ms(in);
  const double cpu = in.compute_ms * in.loop_threads + h + in.load_ms * cpu_share_or_one(in) + h;
  // Other work leaves the job at least half a core (the scheduler shares it out).
  return cpu / std::max(0.5, in.cores - in.other_cores);
}

double predicted_step_ms(const LoaderModelInput& in, int workers) {
  if (workers <= 0) return in.compute_ms + in.load_ms;
  // The loop's own work per batch, one after the other in the main process; the workers load the
  // next batches meanwhile, so the step is the slower of the two, not their sum.
  const double loop = in.compute_ms + handover_ms(in);
  return std::max({period_ms(in, workers), loop, cpu_bound_step_ms(in)});
}

LoaderPlan plan_workers(const LoaderModelInput& in) {
  LoaderPlan p;
  if (in.load_ms <= 0 || in.compute_ms <= 0) return p;
  double share = cpu_share_or_one(in);
  p.waits = in.cpu_share >= 0 && in.cpu_share < th::kLoadingWaitsCpuShare;
  int want = static_cast<int>(std::ceil(in.load_ms / in.compute_ms)) + 1;
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
  p.period_ms = period_ms(in, p.workers);
  p.predicted_step_ms = predicted_step_ms(in, p.workers);
  p.speedup = p.predicted_step_ms > 0 ? in.step_ms / p.predicted_step_ms : 1;
  return p;
}

}  // namespace ts::diagnose
