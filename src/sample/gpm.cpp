#include "sample/gpm.h"

#include <memory>
#include <utility>

namespace ts::sample {

GpmSampler::GpmSampler(const NvmlLibrary& lib, nvml::nvmlDevice_t dev) : lib_(lib), dev_(dev) {
  if (!lib.gpmQueryDeviceSupport || !lib.gpmSampleAlloc || !lib.gpmSampleFree ||
      !lib.gpmSampleGet || !lib.gpmMetricsGet)
    return;
  nvml::nvmlGpmSupport_t s{1, 0};
  if (lib.gpmQueryDeviceSupport(dev, &s) != nvml::SUCCESS || !s.isSupportedDevice) return;
  if (lib.gpmSampleAlloc(&prev_) != nvml::SUCCESS) return;
  if (lib.gpmSampleAlloc(&next_) != nvml::SUCCESS) {
    lib.gpmSampleFree(prev_);
    prev_ = nullptr;
    return;
  }
  supported_ = true;
}

GpmSampler::~GpmSampler() {
  if (prev_) lib_.gpmSampleFree(prev_);
  if (next_) lib_.gpmSampleFree(next_);
}

GpmValues GpmSampler::read(std::chrono::steady_clock::time_point now, bool* lost) {
  if (!supported_) return last_;
  // The driver needs the two samples >= 100 ms apart to compute rates.
  if (have_prev_ && now - prev_t_ < std::chrono::milliseconds(100)) return last_;
  nvml::nvmlReturn_t r = lib_.gpmSampleGet(dev_, next_);
  if (r == nvml::ERROR_GPU_IS_LOST) {
    *lost = true;
    return last_;
  }
  if (r != nvml::SUCCESS) return last_;
  if (have_prev_) {
    // ~27 KB with the 333-entry array: heap, not stack, for the sampler thread.
    auto q = std::make_unique<nvml::nvmlGpmMetricsGet_t>();
    q->version = 1;
    const unsigned ids[] = {nvml::GPM_SM_UTIL,         nvml::GPM_SM_OCCUPANCY,
                            nvml::GPM_ANY_TENSOR_UTIL, nvml::GPM_DRAM_BW_UTIL,
                            nvml::GPM_PCIE_TX_PER_SEC, nvml::GPM_PCIE_RX_PER_SEC};
    q->numMetrics = std::size(ids);
    q->sample1 = prev_;
    q->sample2 = next_;
    for (unsigned i = 0; i < q->numMetrics; ++i) q->metrics[i].metricId = ids[i];
    r = lib_.gpmMetricsGet(q.get());
    if (r == nvml::ERROR_GPU_IS_LOST) {
      *lost = true;
      return last_;
    }
    if (r == nvml::SUCCESS) {
      GpmValues v;
      for (unsigned i = 0; i < q->numMetrics; ++i) {
        const auto& m = q->metrics[i];
        if (m.nvmlReturn != nvml::SUCCESS) continue;
        switch (m.metricId) {
          case nvml::GPM_SM_UTIL: v.sm_active_pct = m.value; break;
          case nvml::GPM_SM_OCCUPANCY: v.sm_occupancy_pct = m.value; break;
          case nvml::GPM_ANY_TENSOR_UTIL: v.tensor_active_pct = m.value; break;
          case nvml::GPM_DRAM_BW_UTIL: v.dram_bw_pct = m.value; break;
          // PCIe GPM metrics are MiB/s.
          case nvml::GPM_PCIE_TX_PER_SEC: v.pcie_tx_bytes_per_s = m.value * 1048576.0; break;
          case nvml::GPM_PCIE_RX_PER_SEC: v.pcie_rx_bytes_per_s = m.value * 1048576.0; break;
        }
      }
      last_ = v;
    }
  }
  std::swap(prev_, next_);
  prev_t_ = now;
  have_prev_ = true;
  return last_;
}

}  // namespace ts::sample
