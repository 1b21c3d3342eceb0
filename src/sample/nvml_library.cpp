#include "sample/nvml_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fmt/format.h>

namespace ts::sample {

template <class F>
void NvmlLibrary::bind(F*& fn, const char* call, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(handle_, n)) {
      fn = reinterpret_cast<F*>(p);
      bound_.emplace_back(call, n);
      return;
    }
  }
}

NvmlLibrary::NvmlLibrary(const std::string& path) {
  std::vector<std::string> candidates;
  if (!path.empty()) {
    candidates.push_back(path);
  } else if (const char* env = std::getenv("TRAINSCOPE_NVML_LIBRARY"); env && *env) {
    candidates.push_back(env);
  } else {
    candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  }
  for (const auto& c : candidates) {
    // RTLD_LOCAL: NVML's symbols must not leak into the global namespace.
    handle_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      path_ = c;
      break;
    }
  }
  if (!handle_) {
    error_ = fmt::format("no NVIDIA driver found ({} not loadable)", candidates.front());
    return;
  }

  bind(init, "init", {"nvmlInit_v2", "nvmlInit"});
  bind(shutdown, "shutdown", {"nvmlShutdown"});
  bind(errorString, "errorString", {"nvmlErrorString"});
  bind(systemGetDriverVersion, "systemGetDriverVersion", {"nvmlSystemGetDriverVersion"});
  bind(deviceGetCount, "deviceGetCount", {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind(deviceGetHandleByIndex, "deviceGetHandleByIndex",
       {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(deviceGetName, "deviceGetName", {"nvmlDeviceGetName"});
  bind(deviceGetUUID, "deviceGetUUID", {"nvmlDeviceGetUUID"});
  bind(deviceGetPciInfo, "deviceGetPciInfo",
       {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  bind(deviceGetUtilizationRates, "deviceGetUtilizationRates", {"nvmlDeviceGetUtilizationRates"});
  bind(deviceGetMemoryInfo_v2, "deviceGetMemoryInfo_v2", {"nvmlDeviceGetMemoryInfo_v2"});
  bind(deviceGetMemoryInfo, "deviceGetMemoryInfo", {"nvmlDeviceGetMemoryInfo"});
  bind(deviceGetTemperature, "deviceGetTemperature", {"nvmlDeviceGetTemperature"});
  bind(deviceGetPowerUsage, "deviceGetPowerUsage", {"nvmlDeviceGetPowerUsage"});
  bind(deviceGetEnforcedPowerLimit, "deviceGetEnforcedPowerLimit",
       {"nvmlDeviceGetEnforcedPowerLimit"});
  bind(deviceGetTotalEnergyConsumption, "deviceGetTotalEnergyConsumption",
       {"nvmlDeviceGetTotalEnergyConsumption"});
  bind(deviceGetClockInfo, "deviceGetClockInfo", {"nvmlDeviceGetClockInfo"});
  bind(deviceGetMaxClockInfo, "deviceGetMaxClockInfo", {"nvmlDeviceGetMaxClockInfo"});
  bind(deviceGetClockEventReasons, "deviceGetClockEventReasons",
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(deviceGetPcieThroughput, "deviceGetPcieThroughput", {"nvmlDeviceGetPcieThroughput"});
  bind(deviceGetCurrPcieLinkGeneration, "deviceGetCurrPcieLinkGeneration",
       {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind(deviceGetCurrPcieLinkWidth, "deviceGetCurrPcieLinkWidth",
       {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind(deviceGetMaxPcieLinkGeneration, "deviceGetMaxPcieLinkGeneration",
       {"nvmlDeviceGetMaxPcieLinkGeneration"});
  bind(deviceGetMaxPcieLinkWidth, "deviceGetMaxPcieLinkWidth", {"nvmlDeviceGetMaxPcieLinkWidth"});
  bind(deviceGetComputeRunningProcesses, "deviceGetComputeRunningProcesses",
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  if (!deviceGetComputeRunningProcesses) {
    bind(deviceGetComputeRunningProcesses, "deviceGetComputeRunningProcesses",
         {"nvmlDeviceGetComputeRunningProcesses"});
    process_entry_size = sizeof(nvml::nvmlProcessInfo_v1_t);
  }
  bind(deviceGetSamples, "deviceGetSamples", {"nvmlDeviceGetSamples"});
  bind(gpmQueryDeviceSupport, "gpmQueryDeviceSupport", {"nvmlGpmQueryDeviceSupport"});
  bind(gpmSampleAlloc, "gpmSampleAlloc", {"nvmlGpmSampleAlloc"});
  bind(gpmSampleFree, "gpmSampleFree", {"nvmlGpmSampleFree"});
  bind(gpmSampleGet, "gpmSampleGet", {"nvmlGpmSampleGet"});
  bind(gpmMetricsGet, "gpmMetricsGet", {"nvmlGpmMetricsGet"});

  if (!init || !deviceGetCount || !deviceGetHandleByIndex) {
    error_ = fmt::format("{}: not a usable NVML library (nvmlInit or nvmlDeviceGetCount missing)",
                         path_);
    return;
  }
  ret r = init();
  if (r != nvml::SUCCESS) {
    error_ = fmt::format("NVML did not start: {}", error_string(r));
    return;
  }
  initialised_ = true;
  ok_ = true;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_ && shutdown) shutdown();
  if (handle_) dlclose(handle_);
}

std::string NvmlLibrary::error_string(nvml::nvmlReturn_t r) const {
  if (errorString) {
    if (const char* s = errorString(r)) return fmt::format("{} (NVML {})", s, r);
  }
  return fmt::format("NVML error {}", r);
}

const std::string& NvmlLibrary::bound(const std::string& call) const {
  static const std::string none;
  for (const auto& [c, s] : bound_)
    if (c == call) return s;
  return none;
}

}  // namespace ts::sample
