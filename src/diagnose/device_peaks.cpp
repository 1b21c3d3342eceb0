#include "diagnose/device_peaks.h"

namespace ts::diagnose {

DevicePeak device_peak(const std::string& n) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("H200")) return {67, 495, 989};
  if (has("H100")) return has("PCIe") ? DevicePeak{51, 378, 756} : DevicePeak{67, 495, 989};
  if (has("A100")) return {19.5, 156, 312};
  if (has("V100")) return {15.7, 0, 125};
  return {};
}

}  // namespace ts::diagnose

namespace ts::diagnose {

Mfu model_flops_utilisation(double flops_per_step, double step_ms, const std::string& device_name,
                            int compute_capability, bool half_precision, bool on_gpu, int tf32) {
  Mfu m;
  if (flops_per_step <= 0 || step_ms <= 0) {
    m.note = "MFU not computed: the model's FLOPs per step are not known";
    return m;
  }
  m.achieved_tflops = flops_per_step / (step_ms / 1e3) / 1e12;
  if (!on_gpu) {
    m.note = "MFU not computed: no known peak for CPU";
    return m;
  }
  DevicePeak p = device_peak(device_name);
  m.peak_tflops = half_precision ? p.half : (compute_capability >= 80 && p.tf32 > 0 && tf32 != 0 ? p.tf32 : p.fp32);
  if (m.peak_tflops <= 0) {
    m.peak_tflops = -1;
    m.note = "MFU not computed: no known peak for " + (device_name.empty() ? std::string("this GPU") : device_name);
    return m;
  }
  m.mfu_pct = 100 * m.achieved_tflops / m.peak_tflops;
  return m;
}

}  // namespace ts::diagnose
