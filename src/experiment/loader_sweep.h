#pragma once
// The DataLoader sweep, done properly: num_workers 0, 1, 2, 4 ... up to the usable cores,
// then pin_memory (when CUDA is there), prefetch_factor and persistent_workers at the best worker
// count; each point in a fresh process. Reports batches/s, time to first batch, per-sample
// __getitem__ and per-batch collate cost; recommends the cheapest setting within 5% of the best
// (or, given a GPU step time, the cheapest that keeps the GPU fed) and predicts the GPU idle share.
#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/finding.h"

namespace ts::experiment {

struct LoaderOptions {
  std::string target, python;
  std::vector<int> workers;  // empty: 0, 1, 2, 4 ... up to the usable cores
  std::vector<int> prefetch = {4};  // tried at the best worker count (PyTorch's default 2 is the base)
  bool try_persistent = true;
  int batches = 40, epochs = 2;
  double gpu_step_ms = -1;  // measured by `trainscope run` or given; -1 unknown
  int cores = 0;            // 0: sched_getaffinity / cgroup cpu.max
  double timeout_s = 300;
  bool progress = true;
};

struct LoaderPoint {
  int num_workers = 0;
  bool pin_memory = false;
  int prefetch_factor = -1;  // -1 with num_workers 0
  bool persistent_workers = false;
  std::string status, reason;
  double batches_per_s = 0;        // steady state: mean arrival interval after the first batches
  double batch_ms_median = 0;
  double first_batch_ms = 0;       // epoch 1: worker start-up included
  double restart_ms = -1;          // epoch 2: what persistent_workers saves
  double epoch_batches_per_s = 0;  // over one epoch of the real dataset: steady rate with the restart
  double predicted_gpu_idle_pct = -1;
  double wall_s = 0;
  bool ok() const { return status == "ok"; }
  std::string label() const;
};

struct LoaderResult {
  std::string target;
  int64_t batch_size = 0, dataset_batches = 0, batch_bytes = 0;
  double getitem_ms = -1, collate_ms = -1;  // per sample / per batch, measured in one process
  bool cuda = false;
  int cores = 0;
  double gpu_step_ms = -1;
  std::vector<LoaderPoint> points;
  int best = -1, recommended = -1;  // indexes into points
  std::string why;                   // why the recommended point
  double shm_total_bytes = -1, shm_free_bytes = -1, shm_needed_bytes = -1;
  std::vector<std::string> warnings;
  std::vector<diagnose::Finding> findings;  // the findings engine on this sweep's evidence
};

// Pure parts (tested directly).
// A GPU that processes a batch in 20 ms fed one every 45 ms idles 1 - 20/45 = 55%: idle = 1 - gpu / max(gpu, delivery period), in percent.
double predicted_gpu_idle_pct(double gpu_step_ms, double batch_period_ms);
// true when a is a cheaper setting than b: fewer workers, then no pinning, smaller prefetch, not persistent.
bool cheaper(const LoaderPoint& a, const LoaderPoint& b);
// Fills best, recommended, why and each point's predicted idle share.
void recommend_loader(LoaderResult& r);
int usable_cores();
std::vector<int> default_worker_counts(int cores);

LoaderResult run_loader_sweep(const LoaderOptions& opt);

std::string loader_text(const LoaderResult& r);
std::string loader_json(const LoaderResult& r);

}  // namespace ts::experiment
