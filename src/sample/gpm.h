#pragma once
// GPM (GPU Performance Monitoring, Hopper and newer): SM activity, SM occupancy, tensor-pipe
// activity and DRAM bandwidth, computed by the driver between two samples taken >= 100 ms
// apart. GPU-Util says "a kernel ran"; these say how much of the GPU it used.
#include <chrono>

#include "sample/nvml_library.h"

namespace ts::sample {

struct GpmValues {
  double sm_active_pct = -1, sm_occupancy_pct = -1, tensor_active_pct = -1, dram_bw_pct = -1;
  double pcie_tx_bytes_per_s = -1, pcie_rx_bytes_per_s = -1;
};

class GpmSampler {
 public:
  GpmSampler(const NvmlLibrary& lib, nvml::nvmlDevice_t dev);
  ~GpmSampler();
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  bool supported() const { return supported_; }
  // Takes a new sample when >= 100 ms passed since the previous one and recomputes the
  // metrics; otherwise returns the last values. GPU_IS_LOST is reported through `lost`.
  GpmValues read(std::chrono::steady_clock::time_point now, bool* lost);

 private:
  const NvmlLibrary& lib_;
  nvml::nvmlDevice_t dev_;
  bool supported_ = false;
  nvml::nvmlGpmSample_t prev_ = nullptr, next_ = nullptr;
  bool have_prev_ = false;
  std::chrono::steady_clock::time_point prev_t_{};
  GpmValues last_;
};

}  // namespace ts::sample
