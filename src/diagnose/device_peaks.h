#pragma once
// Dense peak TFLOP/s per GPU model (no sparsity), for MFU. NVIDIA's datasheets for A100,
// H100 and H200; V100 from NVIDIA's V100 datasheet (SXM2: fp32 15.7, fp16 Tensor Core 125).
#include <string>

namespace ts::diagnose {

struct DevicePeak {
  double fp32 = 0, tf32 = 0, half = 0;  // TFLOP/s; half = bf16/fp16 Tensor Core
};
// Matched on the device name ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB"); zeros unknown.
DevicePeak device_peak(const std::string& device_name);

// Model FLOPs utilisation from the agent's FLOPs per step (agent/trainscope_agent/flops.py) and
// the median step time: achieved = flops / step; MFU = achieved / the device's dense peak for the
// precision the model runs in (bf16/fp16 under autocast, TF32 on compute capability >= 8.0 unless the
// agent saw it off (`tf32`: 1 on, 0 off, -1 unknown), else fp32). Unknown numbers are -1; `note`
// says why MFU is missing when it is.
struct Mfu {
  double achieved_tflops = -1, peak_tflops = -1, mfu_pct = -1;
  std::string note;
};
Mfu model_flops_utilisation(double flops_per_step, double step_ms, const std::string& device_name,
                            int compute_capability, bool half_precision, bool on_gpu, int tf32 = -1);

}  // namespace ts::diagnose
