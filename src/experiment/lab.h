#pragma once
// The three-run lab: fp32, bf16 autocast, bf16 + torch.compile (optionally fp16 + GradScaler
// and bf16 + channels_last), each in a fresh Python process, same seed, same fixed data slice,
// warm-up excluded, clip_grad_norm_(1.0). Samples/s per step (median, p10, p90, spread), peak memory,
// speed-up ratios, and the seed's reading of them.
#include <string>
#include <vector>

#include "diagnose/finding.h"

namespace ts::experiment {

struct LabOptions {
  std::string target;  // path/to/file.py:factory or package.module:factory
  std::string python;  // "" = find one that imports torch
  std::string device = "auto";
  std::vector<std::string> configs;  // empty: fp32, bf16, bf16+compile (+ fp16+scaler, bf16+channels_last if extended)
  bool extended = false;
  int steps = 30, warmup = 5, seed = 0, batch_size = 0;
  double clip = 1.0;
  double timeout_s = 600;  // per configuration
  bool progress = true;
};

struct LabConfigResult {
  std::string name;
  std::string status;  // ok | skipped | error
  std::string reason;
  int64_t batch_size = 0, steps = 0;
  double samples_per_s = 0;          // batch / median step time
  double samples_per_s_p10 = 0, samples_per_s_p90 = 0;  // from the 90th / 10th percentile step times
  double samples_per_s_overall = 0;  // samples / wall time of the measured steps (the seed's number)
  double spread_pct = 0;             // (p90 - p10) / median of the step times
  double step_ms_median = 0;
  double data_wait_pct = -1;         // share of measured step time spent in next(loader)
  double peak_mem_bytes = -1;
  std::string mem_kind;              // cuda_max_allocated | rss_delta_plus_params
  double warmup_ms = 0;              // includes compilation
  int64_t nonfinite_losses = 0;
  double wall_s = 0;                 // the whole process
  std::vector<double> step_ms;       // the measured steps, as the runner timed them
  bool ok() const { return status == "ok"; }
};

// One sentence of the lab's reading, with the ratio it rests on.
struct LabReading {
  std::string id;  // precision-not-bottleneck | bf16-helps | bf16-slower | kernels-already-fused | compile-helps |
                   // compile-slower | take-both | compile-untested | bf16-untested | cpu-bf16-emulated
  std::string text;
  double ratio = 0;
};

struct LabResult {
  std::string target, device, device_name, torch_version, python_version, python;
  std::vector<LabConfigResult> configs;
  double bf16_speedup = -1;     // bf16 / fp32 samples/s, -1 when either did not run
  double compile_speedup = -1;  // bf16+compile / bf16
  double total_speedup = -1;    // bf16+compile / fp32
  std::vector<LabReading> readings;
  std::vector<diagnose::Finding> findings;  // the findings engine on this lab's evidence
  const LabConfigResult* find(const std::string& name) const;
};

// A jump below this ratio is "small" (fp32 -> bf16 under 20%: precision is not the bottleneck).
inline constexpr double kLabSmallJump = 1.20;

std::vector<std::string> lab_configs(const LabOptions& opt);
LabResult run_lab(const LabOptions& opt);
// Ratios and readings from the configurations' numbers (pure: tests call it directly).
void read_lab(LabResult& r);

std::string lab_text(const LabResult& r);
std::string lab_json(const LabResult& r);

}  // namespace ts::experiment
