#pragma once
// The largest batch for which one full training step fits: doubling, then binary search, in one
// Python process that must survive every miss (real CUDA OOMs; on the CPU, steps measured over
// --memory-limit). From the trials: memory per sample (least squares over the steps that fit) and
// a recommended batch that leaves headroom.
#include <cstdint>
#include <string>
#include <vector>

namespace ts::experiment {

struct MaxBatchOptions {
  std::string target, python, device = "auto";
  double memory_limit_bytes = 0;  // required on the CPU; on a GPU caps the process (real OOMs there)
  int start = 2;
  int64_t cap = 65536;
  std::string config = "fp32";  // fp32 | bf16 | fp16
  double headroom = 0.10;       // recommended batch keeps this share of capacity free
  double timeout_s = 600;
  bool progress = true;
};

struct MaxBatchTrial {
  int64_t batch = 0;
  bool fits = false;
  double peak_bytes = 0;
  std::string why;
};

struct MaxBatchResult {
  std::string target, device, device_name, torch_version, config;
  double capacity_bytes = 0, param_bytes = 0, optimizer_state_bytes = 0;
  std::vector<MaxBatchTrial> trials;
  int64_t max_batch = 0, first_miss = -1;
  bool cap_reached = false;
  double bytes_per_sample = 0, fixed_bytes = 0;  // peak ~ fixed + per_sample * batch
  int64_t recommended_batch = 0;
  double leak_bytes = 0;
  std::string leak_kind;
  bool context_ok = true;
  double search_s = 0;
};

// Parses "268435456", "256MiB", "1.5GB", "512M" (K/M/G/T: powers of 1024; kB/MB/GB/TB: of 1000).
double parse_bytes(const std::string& s);
// Fills bytes_per_sample, fixed_bytes and recommended_batch from the trials (pure).
void read_max_batch(MaxBatchResult& r, double headroom);
MaxBatchResult run_max_batch(const MaxBatchOptions& opt);

std::string max_batch_text(const MaxBatchResult& r);
std::string max_batch_json(const MaxBatchResult& r);

}  // namespace ts::experiment
