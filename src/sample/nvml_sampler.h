#pragma once
// Reads every GPU through NVML. Fast metrics (utilisation, the driver's buffered samples,
// GPM) at every call; slow ones (memory, temperature, power, energy, clocks, clock-event
// reasons, PCIe link, processes) when asked, carried forward otherwise. A GPU that answers
// GPU_IS_LOST is marked lost and skipped from then on; the others go on.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sample/gpm.h"
#include "sample/nvml_library.h"
#include "sample/readings.h"

namespace ts::sample {

class NvmlSampler {
 public:
  explicit NvmlSampler(const std::string& library_path = "");
  ~NvmlSampler();

  bool ok() const { return lib_.ok(); }
  const std::string& error() const { return lib_.error(); }
  const std::string& driver_version() const { return driver_version_; }
  const std::vector<GpuInfo>& gpus() const { return info_; }
  const NvmlLibrary& library() const { return lib_; }

  // nvmlDeviceGetPcieThroughput blocks ~20 ms per call in the driver: off unless asked
  // (snapshot asks; GPM gives PCIe traffic cheaply on Hopper).
  void set_pcie_throughput(bool on) { pcie_throughput_ = on; }

  std::vector<GpuReading> read(bool slow, std::chrono::steady_clock::time_point now);

 private:
  struct Device {
    nvml::nvmlDevice_t handle = nullptr;
    std::unique_ptr<GpmSampler> gpm;
    unsigned long long last_sample_us = 0;
    std::vector<nvml::nvmlSample_t> sample_buf;
    std::vector<unsigned char> proc_buf;
    GpuReading last;
    bool have_slow = false;
  };
  bool check(Device& d, nvml::nvmlReturn_t r);  // true on SUCCESS; marks lost
  void read_fast(Device& d, std::chrono::steady_clock::time_point now);
  void read_slow(Device& d);
  void read_processes(Device& d);
  void read_driver_samples(Device& d);

  NvmlLibrary lib_;
  std::string driver_version_;
  std::vector<GpuInfo> info_;
  std::vector<Device> devs_;
  bool pcie_throughput_ = false;
};

}  // namespace ts::sample
