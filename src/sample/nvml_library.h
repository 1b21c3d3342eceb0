#pragma once
// libnvidia-ml loaded with dlopen: one function pointer per NVML call, resolved newest
// versioned symbol first (nvmlInit_v2 before nvmlInit). A symbol the library lacks stays
// null and the caller treats that metric as "not available".
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "sample/nvml_types.h"

namespace ts::sample {

class NvmlLibrary {
 public:
  // Opens `path` ("" = $TRAINSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1, else libnvidia-ml.so)
  // and calls nvmlInit. On failure ok() is false and error() says why in one line.
  explicit NvmlLibrary(const std::string& path = "");
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string error_string(nvml::nvmlReturn_t r) const;
  // Which symbol was bound for a call, e.g. "nvmlDeviceGetCount_v2" ("" when none).
  const std::string& bound(const std::string& call) const;

  using dev = nvml::nvmlDevice_t;
  using ret = nvml::nvmlReturn_t;
  // Entry points (null when the library lacks them).
  ret (*init)() = nullptr;
  ret (*shutdown)() = nullptr;
  const char* (*errorString)(ret) = nullptr;
  ret (*systemGetDriverVersion)(char*, unsigned) = nullptr;
  ret (*deviceGetCount)(unsigned*) = nullptr;
  ret (*deviceGetHandleByIndex)(unsigned, dev*) = nullptr;
  ret (*deviceGetName)(dev, char*, unsigned) = nullptr;
  ret (*deviceGetUUID)(dev, char*, unsigned) = nullptr;
  ret (*deviceGetPciInfo)(dev, nvml::nvmlPciInfo_t*) = nullptr;
  ret (*deviceGetUtilizationRates)(dev, nvml::nvmlUtilization_t*) = nullptr;
  ret (*deviceGetMemoryInfo)(dev, nvml::nvmlMemory_t*) = nullptr;
  ret (*deviceGetMemoryInfo_v2)(dev, nvml::nvmlMemory_v2_t*) = nullptr;
  ret (*deviceGetTemperature)(dev, unsigned, unsigned*) = nullptr;
  ret (*deviceGetPowerUsage)(dev, unsigned*) = nullptr;
  ret (*deviceGetEnforcedPowerLimit)(dev, unsigned*) = nullptr;
  ret (*deviceGetTotalEnergyConsumption)(dev, unsigned long long*) = nullptr;
  ret (*deviceGetClockInfo)(dev, unsigned, unsigned*) = nullptr;
  ret (*deviceGetMaxClockInfo)(dev, unsigned, unsigned*) = nullptr;
  ret (*deviceGetClockEventReasons)(dev, unsigned long long*) = nullptr;
  ret (*deviceGetPcieThroughput)(dev, unsigned, unsigned*) = nullptr;
  ret (*deviceGetCurrPcieLinkGeneration)(dev, unsigned*) = nullptr;
  ret (*deviceGetCurrPcieLinkWidth)(dev, unsigned*) = nullptr;
  ret (*deviceGetMaxPcieLinkGeneration)(dev, unsigned*) = nullptr;
  ret (*deviceGetMaxPcieLinkWidth)(dev, unsigned*) = nullptr;
  // Entries are 24 bytes for _v2/_v3, 16 for the unversioned call: see process_entry_size.
  ret (*deviceGetComputeRunningProcesses)(dev, unsigned*, void*) = nullptr;
  size_t process_entry_size = 24;
  ret (*deviceGetSamples)(dev, unsigned, unsigned long long, int*, unsigned*,
                          nvml::nvmlSample_t*) = nullptr;
  ret (*gpmQueryDeviceSupport)(dev, nvml::nvmlGpmSupport_t*) = nullptr;
  ret (*gpmSampleAlloc)(nvml::nvmlGpmSample_t*) = nullptr;
  ret (*gpmSampleFree)(nvml::nvmlGpmSample_t) = nullptr;
  ret (*gpmSampleGet)(dev, nvml::nvmlGpmSample_t) = nullptr;
  ret (*gpmMetricsGet)(nvml::nvmlGpmMetricsGet_t*) = nullptr;

 private:
  template <class F>
  void bind(F*& fn, const char* call, std::initializer_list<const char*> names);
  void* handle_ = nullptr;
  bool ok_ = false;
  bool initialised_ = false;
  std::string error_, path_;
  std::vector<std::pair<std::string, std::string>> bound_;
};

}  // namespace ts::sample
