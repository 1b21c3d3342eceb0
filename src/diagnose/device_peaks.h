#pragma once
// Dense peak TFLOP/s per GPU model (no sparsity), for MFU. REFERENCE.md section 6 for A100,
// H100 and H200; V100 from NVIDIA's V100 datasheet (SXM2: fp32 15.7, fp16 Tensor Core 125).
#include <string>

namespace ts::diagnose {

struct DevicePeak {
  double fp32 = 0, tf32 = 0, half = 0;  // TFLOP/s; half = bf16/fp16 Tensor Core
};
// Matched on the device name ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB"); zeros unknown.
DevicePeak device_peak(const std::string& device_name);

}  // namespace ts::diagnose
