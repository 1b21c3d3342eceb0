#pragma once
// Everything the doctor checks look at, gathered once by collect.cpp from the python probe,
// /proc, /sys, the cgroup and NVML. Checks only read this struct, so tests can craft it.
// Unknown numbers are -1 (or empty strings): a check that needs them says "skip".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sample/cpu_budget.h"
#include "sample/oversubscription.h"
#include "sample/runtime_libraries.h"

namespace ts::doctor {

// The cores a process may really use (affinity, cgroup quota): the one reading in sample.
using CpuBudget = sample::CpuBudget;

struct HostFacts {
  std::string hostname;
  std::string cpu_vendor;  // /proc/cpuinfo vendor_id: GenuineIntel, AuthenticAMD, ...
  std::string cpu_model;
  CpuBudget budget;
  int64_t shm_total_bytes = -1;  // statvfs("/dev/shm")
  int64_t shm_free_bytes = -1;
};

struct TorchDevice {
  std::string name;
  int major = -1, minor = -1;
};

// What the target Python reports about itself (python_probe.cpp), or, with --pid, what we can
// read from the outside (torch/version.py next to the mapped libtorch).
struct PythonFacts {
  bool ran = false;            // the probe ran and printed its JSON
  std::string error;           // why it did not (timeout, not found, crashed)
  std::string python;          // interpreter path
  std::string python_version;
  bool has_torch = false;
  std::string torch_error;     // the ImportError text
  std::string torch_version;   // "2.4.1+cu121", "1.13.0a0"
  std::string torch_dir;
  std::string torch_cuda;      // torch.version.cuda; empty for a CPU build
  bool cuda_built = false;
  int cuda_available = -1;     // torch.cuda.is_available(): 1/0, -1 unknown
  int cuda_device_count = -1;
  bool cuda_probe_ok = false;  // a real matmul on cuda:0 and a synchronize succeeded
  std::string cuda_error;      // the exception text if it did not
  std::vector<TorchDevice> devices;
  std::vector<std::string> arch_list;  // torch.cuda.get_arch_list(): sm_80, compute_90, ...
  int num_threads = -1;        // torch.get_num_threads()
  int num_interop_threads = -1;
  bool has_numpy = false;
  std::string numpy_version;
};

struct ChildProcess {
  int pid = -1;
  int ppid = -1;
  std::string comm;
  int threads = -1;
};

// The process whose libraries and environment we read: the probe, or the job given by --pid.
struct ProcessFacts {
  int pid = -1;
  bool readable = false;                    // maps/environ were readable (same uid or ptrace)
  std::string read_error;
  std::vector<std::string> libraries;       // distinct mapped .so paths
  std::vector<sample::RuntimeLibrary> runtimes;  // the BLAS/OpenMP ones among them
  std::map<std::string, std::string> env;   // thread and CUDA variables that are set
  int threads = -1;
  std::map<std::string, int> thread_names;  // comm -> count
  std::vector<ChildProcess> tree;           // descendants (DataLoader workers, torchrun ranks)
};

struct GpuProcess {
  int pid = -1;
  uint64_t used_bytes = 0;
  std::string name;  // /proc/PID/comm when visible (NVML PIDs are the host namespace's)
};

struct GpuFacts {
  int index = -1;
  std::string name, uuid, pci_bus_id;
  int cc_major = -1, cc_minor = -1;
  int pcie_gen = -1, pcie_gen_max = -1, pcie_width = -1, pcie_width_max = -1;
  double util_ratio = -1;          // 0-1
  uint64_t memory_used_bytes = 0, memory_total_bytes = 0;
  int64_t throttle_reasons = -1;   // clock-event reason bits (nvml.h nvmlClocksEventReasons)
  std::vector<GpuProcess> processes;
  bool processes_known = false;
  int64_t ecc_uncorrected_volatile = -1, ecc_corrected_volatile = -1;
  int64_t ecc_uncorrected_aggregate = -1;
  int remap_pending = -1, remap_failure = -1;  // row remapping (Ampere+)
  bool lost = false;
};

struct NvidiaFacts {
  bool driver_found = false;
  std::string error;                // why NVML could not be used
  std::string driver_version;
  int cuda_driver_version = -1;     // 12040 = CUDA 12.4
  std::vector<GpuFacts> gpus;
  bool kernel_log_readable = false; // /dev/kmsg, for Xid lines
  std::vector<std::string> xid_lines;
};

struct DoctorFacts {
  bool inspecting_pid = false;  // --pid: a running job, no probe
  HostFacts host;
  PythonFacts python;
  ProcessFacts process;
  NvidiaFacts nvidia;
  // --pid: the job's threads measured live across its process tree.
  std::optional<sample::Oversubscription> oversubscription;  // sample/oversubscription.h
};

}  // namespace ts::doctor
