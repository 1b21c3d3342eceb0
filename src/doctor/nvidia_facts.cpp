#include "doctor/nvidia_facts.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "doctor/proc_inspect.h"
#include "sample/nvml_library.h"

namespace ts::doctor {
namespace {

namespace nv = ts::sample::nvml;
using ts::sample::NvmlLibrary;

// Calls the sampler's loader does not bind (doctor-only), resolved from the same handle.
struct NvmlExtras {
  void* handle = nullptr;
  nv::nvmlReturn_t (*cudaDriverVersion)(int*) = nullptr;
  nv::nvmlReturn_t (*computeCapability)(nv::nvmlDevice_t, int*, int*) = nullptr;
  // (device, errorType 0=corrected 1=uncorrected, counterType 0=volatile 1=aggregate, count)
  nv::nvmlReturn_t (*totalEccErrors)(nv::nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nv::nvmlReturn_t (*remappedRows)(nv::nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;

  explicit NvmlExtras(const std::string& path) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!handle) return;
    auto sym = [&](auto& fn, std::initializer_list<const char*> names) {
      for (const char* n : names)
        if (void* p = dlsym(handle, n)) {
          fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
          return;
        }
    };
    sym(cudaDriverVersion, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
    sym(computeCapability, {"nvmlDeviceGetCudaComputeCapability"});
    sym(totalEccErrors, {"nvmlDeviceGetTotalEccErrors"});
    sym(remappedRows, {"nvmlDeviceGetRemappedRows"});
  }
  ~NvmlExtras() {
    if (handle) dlclose(handle);
  }
};

std::string cstr(const char* buf) { return std::string(buf, strnlen(buf, 96)); }

void read_kernel_log(NvidiaFacts& f) {
  // Each read() of /dev/kmsg returns one record; O_NONBLOCK ends with EAGAIN at the tail.
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  std::vector<std::string> records;
  char buf[8192];
  for (int i = 0; i < 200000; ++i) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EPIPE) continue;  // a record was overwritten while we read
    if (n <= 0) {
      f.kernel_log_readable = f.kernel_log_readable || (n < 0 && errno == EAGAIN);
      break;
    }
    f.kernel_log_readable = true;
    std::string_view rec(buf, static_cast<size_t>(n));
    if (rec.find("Xid") != std::string_view::npos) records.emplace_back(rec);
  }
  close(fd);
  f.xid_lines = filter_xid_lines(records);
}

}  // namespace

std::vector<std::string> filter_xid_lines(const std::vector<std::string>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    auto at = r.find("NVRM: Xid");
    if (at == std::string::npos) continue;
    std::string line = r.substr(at);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

int xid_code(std::string_view line) {
  // "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
  auto at = line.find("Xid");
  if (at == std::string_view::npos) return -1;
  auto close = line.find("):", at);
  if (close == std::string_view::npos) return -1;
  std::string_view rest = line.substr(close + 2);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  int code = -1;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), code);
  return r.ec == std::errc() ? code : -1;
}

NvidiaFacts read_nvidia(const std::string& library) {
  NvidiaFacts f;
  read_kernel_log(f);
  NvmlLibrary lib(library);
  if (!lib.ok()) {
    f.error = lib.error();
    return f;
  }
  f.driver_found = true;
  NvmlExtras extra(lib.path());
  if (lib.systemGetDriverVersion) {
    char v[96] = {};
    if (lib.systemGetDriverVersion(v, sizeof(v)) == nv::SUCCESS) f.driver_version = cstr(v);
  }
  if (extra.cudaDriverVersion) {
    int v = 0;
    if (extra.cudaDriverVersion(&v) == nv::SUCCESS) f.cuda_driver_version = v;
  }
  unsigned count = 0;
  if (nv::nvmlReturn_t r = lib.deviceGetCount(&count); r != nv::SUCCESS) {
    f.error = "nvmlDeviceGetCount: " + lib.error_string(r);
    return f;
  }
  for (unsigned i = 0; i < count; ++i) {
    GpuFacts g;
    g.index = static_cast<int>(i);
    nv::nvmlDevice_t dev = nullptr;
    nv::nvmlReturn_t r = lib.deviceGetHandleByIndex(i, &dev);
    if (r != nv::SUCCESS) {
      g.lost = r == nv::ERROR_GPU_IS_LOST;
      g.name = "(" + lib.error_string(r) + ")";
      f.gpus.push_back(std::move(g));
      continue;
    }
    char buf[96] = {};
    if (lib.deviceGetName && lib.deviceGetName(dev, buf, sizeof(buf)) == nv::SUCCESS) g.name = cstr(buf);
    std::memset(buf, 0, sizeof(buf));
    if (lib.deviceGetUUID && lib.deviceGetUUID(dev, buf, sizeof(buf)) == nv::SUCCESS) g.uuid = cstr(buf);
    nv::nvmlPciInfo_t pci{};
    if (lib.deviceGetPciInfo && lib.deviceGetPciInfo(dev, &pci) == nv::SUCCESS)
      g.pci_bus_id = pci.busId[0] ? std::string(pci.busId, strnlen(pci.busId, 32))
                                  : std::string(pci.busIdLegacy, strnlen(pci.busIdLegacy, 16));
    if (extra.computeCapability) {
      int a = -1, b = -1;
      if (extra.computeCapability(dev, &a, &b) == nv::SUCCESS) g.cc_major = a, g.cc_minor = b;
    }
    unsigned u = 0;
    if (lib.deviceGetCurrPcieLinkGeneration && lib.deviceGetCurrPcieLinkGeneration(dev, &u) == nv::SUCCESS) g.pcie_gen = static_cast<int>(u);
    if (lib.deviceGetMaxPcieLinkGeneration && lib.deviceGetMaxPcieLinkGeneration(dev, &u) == nv::SUCCESS) g.pcie_gen_max = static_cast<int>(u);
    if (lib.deviceGetCurrPcieLinkWidth && lib.deviceGetCurrPcieLinkWidth(dev, &u) == nv::SUCCESS) g.pcie_width = static_cast<int>(u);
    if (lib.deviceGetMaxPcieLinkWidth && lib.deviceGetMaxPcieLinkWidth(dev, &u) == nv::SUCCESS) g.pcie_width_max = static_cast<int>(u);
    nv::nvmlUtilization_t util{};
    if (lib.deviceGetUtilizationRates) {
      r = lib.deviceGetUtilizationRates(dev, &util);
      if (r == nv::SUCCESS) g.util_ratio = util.gpu / 100.0;
      if (r == nv::ERROR_GPU_IS_LOST) g.lost = true;
    }
    nv::nvmlMemory_t mem{};
    if (lib.deviceGetMemoryInfo && lib.deviceGetMemoryInfo(dev, &mem) == nv::SUCCESS) {
      g.memory_used_bytes = mem.used;
      g.memory_total_bytes = mem.total;
    }
    unsigned long long reasons = 0;
    if (lib.deviceGetClockEventReasons && lib.deviceGetClockEventReasons(dev, &reasons) == nv::SUCCESS)
      g.throttle_reasons = static_cast<int64_t>(reasons);
    if (lib.deviceGetComputeRunningProcesses) {
      // Grow and retry on INSUFFICIENT_SIZE; entries are process_entry_size bytes.
      std::vector<unsigned char> raw;
      unsigned n = 8;
      for (int attempt = 0; attempt < 5; ++attempt) {
        raw.assign(static_cast<size_t>(n) * lib.process_entry_size, 0);
        unsigned have = n;
        r = lib.deviceGetComputeRunningProcesses(dev, &have, raw.data());
        if (r == nv::ERROR_INSUFFICIENT_SIZE) {
          n = std::max(have, n * 2) + 4;
          continue;
        }
        if (r == nv::SUCCESS) {
          g.processes_known = true;
          for (unsigned k = 0; k < have && k < n; ++k) {
            const unsigned char* e = raw.data() + static_cast<size_t>(k) * lib.process_entry_size;
            nv::nvmlProcessInfo_v1_t p{};
            std::memcpy(&p, e, sizeof(p));  // pid and usedGpuMemory lead every version
            GpuProcess gp;
            gp.pid = static_cast<int>(p.pid);
            // NVML_VALUE_NOT_AVAILABLE is ULLONG_MAX (no permission to see the usage).
            gp.used_bytes = p.usedGpuMemory == ~0ULL ? 0 : p.usedGpuMemory;
            std::string comm;
            if (read_small_file("/proc/" + std::to_string(gp.pid) + "/comm", comm)) {
              while (!comm.empty() && comm.back() == '\n') comm.pop_back();
              gp.name = comm;
            }
            g.processes.push_back(std::move(gp));
          }
        }
        break;
      }
    }
    unsigned long long ecc = 0;
    if (extra.totalEccErrors) {
      if (extra.totalEccErrors(dev, 1, 0, &ecc) == nv::SUCCESS) g.ecc_uncorrected_volatile = static_cast<int64_t>(ecc);
      if (extra.totalEccErrors(dev, 0, 0, &ecc) == nv::SUCCESS) g.ecc_corrected_volatile = static_cast<int64_t>(ecc);
      if (extra.totalEccErrors(dev, 1, 1, &ecc) == nv::SUCCESS) g.ecc_uncorrected_aggregate = static_cast<int64_t>(ecc);
    }
    if (extra.remappedRows) {
      unsigned corr = 0, unc = 0, pending = 0, failed = 0;
      if (extra.remappedRows(dev, &corr, &unc, &pending, &failed) == nv::SUCCESS) {
        g.remap_pending = static_cast<int>(pending);
        g.remap_failure = static_cast<int>(failed);
      }
    }
    f.gpus.push_back(std::move(g));
  }
  return f;
}

}  // namespace ts::doctor
