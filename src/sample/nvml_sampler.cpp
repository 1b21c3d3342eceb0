#include "sample/nvml_sampler.h"

#include <cstring>

namespace ts::sample {

namespace {
double sample_value(int type, const nvml::nvmlValue_t& v) {
  switch (type) {
    case nvml::VALUE_TYPE_DOUBLE: return v.dVal;
    case nvml::VALUE_TYPE_UNSIGNED_INT: return v.uiVal;
    case nvml::VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.ulVal);
    case nvml::VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.ullVal);
    case nvml::VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.sllVal);
    case nvml::VALUE_TYPE_SIGNED_INT: return v.siVal;
  }
  return v.uiVal;
}
}  // namespace

NvmlSampler::NvmlSampler(const std::string& library_path) : lib_(library_path) {
  if (!lib_.ok()) return;
  char buf[256] = {};
  if (lib_.systemGetDriverVersion && lib_.systemGetDriverVersion(buf, sizeof buf) == nvml::SUCCESS)
    driver_version_ = buf;
  unsigned n = 0;
  if (lib_.deviceGetCount(&n) != nvml::SUCCESS) n = 0;
  devs_.resize(n);
  info_.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    Device& d = devs_[i];
    GpuInfo& g = info_[i];
    g.index = static_cast<int>(i);
    d.last.index = g.index;
    if (lib_.deviceGetHandleByIndex(i, &d.handle) != nvml::SUCCESS) {
      d.last.lost = true;  // a device we cannot open is as good as lost
      continue;
    }
    std::memset(buf, 0, sizeof buf);
    if (lib_.deviceGetName && check(d, lib_.deviceGetName(d.handle, buf, sizeof buf))) g.name = buf;
    std::memset(buf, 0, sizeof buf);
    if (lib_.deviceGetUUID && check(d, lib_.deviceGetUUID(d.handle, buf, sizeof buf))) g.uuid = buf;
    nvml::nvmlPciInfo_t pci{};
    if (lib_.deviceGetPciInfo && check(d, lib_.deviceGetPciInfo(d.handle, &pci))) {
      pci.busId[sizeof pci.busId - 1] = 0;
      pci.busIdLegacy[sizeof pci.busIdLegacy - 1] = 0;
      g.pci_bus_id = pci.busId[0] ? pci.busId : pci.busIdLegacy;
    }
    unsigned v = 0;
    if (lib_.deviceGetMaxClockInfo && check(d, lib_.deviceGetMaxClockInfo(d.handle, nvml::CLOCK_SM, &v)))
      g.sm_clock_max_mhz = v;
    if (lib_.deviceGetMaxClockInfo && check(d, lib_.deviceGetMaxClockInfo(d.handle, nvml::CLOCK_MEM, &v)))
      g.mem_clock_max_mhz = v;
    if (lib_.deviceGetMaxPcieLinkGeneration && check(d, lib_.deviceGetMaxPcieLinkGeneration(d.handle, &v)))
      g.pcie_gen_max = static_cast<int>(v);
    if (lib_.deviceGetMaxPcieLinkWidth && check(d, lib_.deviceGetMaxPcieLinkWidth(d.handle, &v)))
      g.pcie_width_max = static_cast<int>(v);
    if (lib_.deviceGetEnforcedPowerLimit && check(d, lib_.deviceGetEnforcedPowerLimit(d.handle, &v)))
      g.power_limit_w = v / 1000.0;
    d.gpm = std::make_unique<GpmSampler>(lib_, d.handle);
    g.gpm_supported = d.gpm->supported();
    read_slow(d);
    g.mem_total_bytes = d.last.mem_total_bytes;
  }
}

NvmlSampler::~NvmlSampler() = default;

bool NvmlSampler::check(Device& d, nvml::nvmlReturn_t r) {
  if (r == nvml::ERROR_GPU_IS_LOST) d.last.lost = true;
  return r == nvml::SUCCESS;
}

std::vector<GpuReading> NvmlSampler::read(bool slow, std::chrono::steady_clock::time_point now) {
  std::vector<GpuReading> out;
  out.reserve(devs_.size());
  for (Device& d : devs_) {
    d.last.util_samples.clear();  // processes are carried forward like the other slow fields
    if (!d.last.lost) {
      read_fast(d, now);
      if (!d.last.lost && (slow || !d.have_slow)) read_slow(d);
    }
    out.push_back(d.last);
  }
  return out;
}

void NvmlSampler::read_fast(Device& d, std::chrono::steady_clock::time_point now) {
  GpuReading& g = d.last;
  nvml::nvmlUtilization_t u{};
  if (lib_.deviceGetUtilizationRates && check(d, lib_.deviceGetUtilizationRates(d.handle, &u))) {
    g.util_pct = u.gpu;
    g.mem_util_pct = u.memory;
  }
  if (g.lost) return;
  read_driver_samples(d);
  if (g.lost) return;
  if (d.gpm && d.gpm->supported()) {
    bool lost = false;
    GpmValues v = d.gpm->read(now, &lost);
    if (lost) {
      g.lost = true;
      return;
    }
    g.sm_active_pct = v.sm_active_pct;
    g.sm_occupancy_pct = v.sm_occupancy_pct;
    g.tensor_active_pct = v.tensor_active_pct;
    g.dram_bw_pct = v.dram_bw_pct;
    if (v.pcie_tx_bytes_per_s >= 0) g.pcie_tx_bytes_per_s = v.pcie_tx_bytes_per_s;
    if (v.pcie_rx_bytes_per_s >= 0) g.pcie_rx_bytes_per_s = v.pcie_rx_bytes_per_s;
  }
}

void NvmlSampler::read_driver_samples(Device& d) {
  if (!lib_.deviceGetSamples) return;
  int type = 0;
  unsigned count = 0;
  // NULL buffer: the driver says how many entries it could return.
  nvml::nvmlReturn_t r = lib_.deviceGetSamples(d.handle, nvml::SAMPLE_GPU_UTILIZATION,
                                               d.last_sample_us, &type, &count, nullptr);
  if (!check(d, r) || count == 0) return;
  d.sample_buf.resize(count);
  r = lib_.deviceGetSamples(d.handle, nvml::SAMPLE_GPU_UTILIZATION, d.last_sample_us, &type,
                            &count, d.sample_buf.data());
  if (!check(d, r)) return;  // NOT_FOUND: nothing new since last_sample_us
  for (unsigned i = 0; i < count && i < d.sample_buf.size(); ++i) {
    const auto& s = d.sample_buf[i];
    if (s.timeStamp <= d.last_sample_us) continue;
    d.last.util_samples.push_back({s.timeStamp, sample_value(type, s.sampleValue)});
  }
  for (const auto& s : d.last.util_samples)
    if (s.t_us > d.last_sample_us) d.last_sample_us = s.t_us;
}

void NvmlSampler::read_slow(Device& d) {
  GpuReading& g = d.last;
  d.have_slow = true;
  nvml::nvmlMemory_v2_t m2{};
  m2.version = nvml::kMemoryV2Version;
  nvml::nvmlMemory_t m{};
  // _v2 separates driver-reserved memory from "used"; older drivers only have the v1 call.
  if (lib_.deviceGetMemoryInfo_v2 && check(d, lib_.deviceGetMemoryInfo_v2(d.handle, &m2))) {
    g.mem_total_bytes = static_cast<double>(m2.total);
    g.mem_used_bytes = static_cast<double>(m2.used);
  } else if (!g.lost && lib_.deviceGetMemoryInfo && check(d, lib_.deviceGetMemoryInfo(d.handle, &m))) {
    g.mem_total_bytes = static_cast<double>(m.total);
    g.mem_used_bytes = static_cast<double>(m.used);
  }
  unsigned v = 0;
  unsigned long long ull = 0;
  if (g.lost) return;
  if (lib_.deviceGetTemperature && check(d, lib_.deviceGetTemperature(d.handle, nvml::TEMPERATURE_GPU, &v)))
    g.temp_c = v;
  if (g.lost) return;
  if (lib_.deviceGetPowerUsage && check(d, lib_.deviceGetPowerUsage(d.handle, &v))) g.power_w = v / 1000.0;
  if (g.lost) return;
  if (lib_.deviceGetTotalEnergyConsumption && check(d, lib_.deviceGetTotalEnergyConsumption(d.handle, &ull)))
    g.energy_j = static_cast<double>(ull) / 1000.0;
  if (g.lost) return;
  if (lib_.deviceGetClockInfo && check(d, lib_.deviceGetClockInfo(d.handle, nvml::CLOCK_SM, &v)))
    g.sm_clock_mhz = v;
  if (lib_.deviceGetClockInfo && check(d, lib_.deviceGetClockInfo(d.handle, nvml::CLOCK_MEM, &v)))
    g.mem_clock_mhz = v;
  if (g.lost) return;
  if (lib_.deviceGetClockEventReasons && check(d, lib_.deviceGetClockEventReasons(d.handle, &ull)))
    g.clock_reasons = static_cast<int64_t>(ull);
  if (lib_.deviceGetCurrPcieLinkGeneration && check(d, lib_.deviceGetCurrPcieLinkGeneration(d.handle, &v)))
    g.pcie_gen = static_cast<int>(v);
  if (lib_.deviceGetCurrPcieLinkWidth && check(d, lib_.deviceGetCurrPcieLinkWidth(d.handle, &v)))
    g.pcie_width = static_cast<int>(v);
  if (g.lost) return;
  if (pcie_throughput_ && lib_.deviceGetPcieThroughput) {
    // KB/s, sampled by the driver over ~20 ms.
    if (check(d, lib_.deviceGetPcieThroughput(d.handle, nvml::PCIE_UTIL_TX_BYTES, &v)))
      g.pcie_tx_bytes_per_s = v * 1024.0;
    if (check(d, lib_.deviceGetPcieThroughput(d.handle, nvml::PCIE_UTIL_RX_BYTES, &v)))
      g.pcie_rx_bytes_per_s = v * 1024.0;
  }
  if (g.lost) return;
  read_processes(d);
}

void NvmlSampler::read_processes(Device& d) {
  if (!lib_.deviceGetComputeRunningProcesses) return;
  d.last.processes.clear();
  const size_t es = lib_.process_entry_size;
  unsigned cap = static_cast<unsigned>(d.proc_buf.size() / es);
  if (cap < 8) cap = 8;
  // Processes may start between the sizing answer and the next call: grow and retry.
  for (int attempt = 0; attempt < 6; ++attempt) {
    d.proc_buf.assign(static_cast<size_t>(cap) * es, 0);
    unsigned count = cap;
    nvml::nvmlReturn_t r = lib_.deviceGetComputeRunningProcesses(d.handle, &count, d.proc_buf.data());
    if (r == nvml::ERROR_INSUFFICIENT_SIZE) {
      cap = (count > cap ? count : cap) * 2;
      continue;
    }
    if (!check(d, r)) return;
    for (unsigned i = 0; i < count && i < cap; ++i) {
      const unsigned char* p = d.proc_buf.data() + i * es;
      GpuProcess gp;
      if (es == sizeof(nvml::nvmlProcessInfo_v1_t)) {
        nvml::nvmlProcessInfo_v1_t e;
        std::memcpy(&e, p, sizeof e);
        gp.pid = e.pid;
        gp.used_bytes = static_cast<double>(e.usedGpuMemory);
      } else {
        nvml::nvmlProcessInfo_t e;
        std::memcpy(&e, p, sizeof e);
        gp.pid = e.pid;
        gp.used_bytes = static_cast<double>(e.usedGpuMemory);
      }
      // NVML_VALUE_NOT_AVAILABLE (ULL max) under some virtualisation / MIG setups.
      if (gp.used_bytes >= 1.8e19) gp.used_bytes = -1;
      d.last.processes.push_back(gp);
    }
    return;
  }
}

}  // namespace ts::sample
