// The loader sweep's reading: which setting to use, and what the GPU would do with each.
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>

#include "experiment/loader_sweep.h"

namespace ts::experiment {

std::string LoaderPoint::label() const {
  if (num_workers == 0) return fmt::format("num_workers=0{}", pin_memory ? " pin_memory" : "");
  return fmt::format("num_workers={}{} prefetch_factor={}{}", num_workers, pin_memory ? " pin_memory" : "",
                     prefetch_factor, persistent_workers ? " persistent" : "");
}

double predicted_gpu_idle_pct(double gpu_step_ms, double batch_period_ms) {
  if (gpu_step_ms <= 0 || batch_period_ms <= 0) return -1;
  return 100.0 * std::max(0.0, 1.0 - gpu_step_ms / std::max(gpu_step_ms, batch_period_ms));
}

bool cheaper(const LoaderPoint& a, const LoaderPoint& b) {
  auto key = [](const LoaderPoint& p) {
    return std::tuple(p.num_workers, p.pin_memory, std::max(p.prefetch_factor, 0), p.persistent_workers);
  };
  return key(a) < key(b);
}

void recommend_loader(LoaderResult& r) {
  r.best = r.recommended = -1;
  for (size_t i = 0; i < r.points.size(); ++i) {
    auto& p = r.points[i];
    if (!p.ok()) continue;
    // One epoch of the real dataset: steady batches plus the restart a new epoch costs.
    double n = double(r.dataset_batches > 0 ? r.dataset_batches : 1000);
    double restart_s = p.restart_ms > 0 ? p.restart_ms / 1000.0 : 0;
    p.epoch_batches_per_s = p.batches_per_s > 0 ? n / (n / p.batches_per_s + restart_s) : 0;
    p.predicted_gpu_idle_pct =
        p.epoch_batches_per_s > 0 ? predicted_gpu_idle_pct(r.gpu_step_ms, 1000.0 / p.epoch_batches_per_s) : -1;
    if (r.best < 0 || p.epoch_batches_per_s > r.points[size_t(r.best)].epoch_batches_per_s) r.best = int(i);
  }
  if (r.best < 0) return;
  double best_rate = r.points[size_t(r.best)].epoch_batches_per_s;
  // With a GPU step time the loader need only keep up with the GPU: faster than that buys nothing.
  double need = best_rate;
  bool gpu_bound = r.gpu_step_ms > 0 && 1000.0 / r.gpu_step_ms < best_rate;
  if (gpu_bound) need = 1000.0 / r.gpu_step_ms;
  for (size_t i = 0; i < r.points.size(); ++i) {
    auto& p = r.points[i];
    if (!p.ok() || p.epoch_batches_per_s < 0.95 * need) continue;
    if (r.recommended < 0 || cheaper(p, r.points[size_t(r.recommended)])) r.recommended = int(i);
  }
  auto& rec = r.points[size_t(r.recommended)];
  if (gpu_bound) {
    r.why = fmt::format("the cheapest setting that delivers a batch within the GPU's {:.1f} ms step "
                        "({:.1f} batches/s needed, {:.1f} delivered)",
                        r.gpu_step_ms, need, rec.epoch_batches_per_s);
  } else if (r.recommended == r.best) {
    r.why = fmt::format("the fastest setting ({:.1f} batches/s); nothing cheaper is within 5%", best_rate);
  } else {
    r.why = fmt::format("the cheapest setting within 5% of the best ({:.1f} vs {:.1f} batches/s)",
                        rec.epoch_batches_per_s, best_rate);
  }
  if (r.gpu_step_ms > 0 && !gpu_bound)
    r.warnings.push_back(fmt::format("even the fastest setting delivers a batch every {:.1f} ms, slower than the "
                                     "GPU's {:.1f} ms step: the GPU idles {:.0f}%; make __getitem__ cheaper "
                                     "(cache decoded samples, move augmentation to the GPU) or add cores",
                                     1000.0 / best_rate, r.gpu_step_ms,
                                     predicted_gpu_idle_pct(r.gpu_step_ms, 1000.0 / best_rate)));
}

int usable_cores() {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  // A cgroup v2 quota ("max 100000" or "200000 100000") caps the cores really available.
  std::ifstream f("/sys/fs/cgroup/cpu.max");
  std::string quota, period;
  if (f >> quota >> period && quota != "max") {
    double q = std::atof(quota.c_str()), p = std::atof(period.c_str());
    if (p > 0) n = std::min(n > 0 ? n : 1 << 20, std::max(1, int(std::floor(q / p))));
  }
  return std::max(1, n);
}

std::vector<int> default_worker_counts(int cores) {
  std::vector<int> w = {0};
  for (int k = 1; k <= cores; k *= 2) w.push_back(k);
  if (w.back() != cores) w.push_back(cores);
  return w;
}

}  // namespace ts::experiment
