#pragma once
// Plain data for one sampling tick: what the GPUs (NVML), the host (/proc) and the job's
// processes looked like at one instant. -1 (or empty) means "not available" everywhere:
// an old driver, a missing symbol or NOT_SUPPORTED is never an error, just a hole.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ts::sample {

// NVML clock-event ("throttle") reason bits, as nvml.h defines them (nvmlClocksEventReasons).
enum ClockEventReason : uint64_t {
  kReasonGpuIdle = 0x1,
  kReasonAppClocks = 0x2,
  kReasonSwPowerCap = 0x4,
  kReasonHwSlowdown = 0x8,
  kReasonSyncBoost = 0x10,
  kReasonSwThermal = 0x20,
  kReasonHwThermal = 0x40,
  kReasonHwPowerBrake = 0x80,
  kReasonDisplayClocks = 0x100,
};
// Reasons that cost speed (power or heat); idle, app clocks, sync boost and display are not.
constexpr uint64_t kSlowdownReasons = kReasonSwPowerCap | kReasonHwSlowdown | kReasonSwThermal |
                                      kReasonHwThermal | kReasonHwPowerBrake;
// "sw_power_cap,hw_thermal" (empty for 0).
std::string decode_clock_reasons(uint64_t bits);

// What does not change while a GPU is up: read once at start.
struct GpuInfo {
  int index = 0;
  std::string name, uuid, pci_bus_id;
  double mem_total_bytes = -1;
  double sm_clock_max_mhz = -1, mem_clock_max_mhz = -1;
  int pcie_gen_max = -1, pcie_width_max = -1;
  double power_limit_w = -1;
  bool gpm_supported = false;
};

struct GpuProcess {
  uint32_t pid = 0;  // host-namespace PID (may not match /proc inside a container)
  double used_bytes = -1;
};

// One driver-buffered utilisation sample (nvmlDeviceGetSamples): real timestamps, so the
// driver's own sample period is known.
struct DriverSample {
  uint64_t t_us = 0;  // driver clock, microseconds
  double value = 0;
};

struct GpuReading {
  int index = 0;
  bool lost = false;  // GPU_IS_LOST seen: no further readings from this GPU
  double util_pct = -1, mem_util_pct = -1;  // "GPU-Util": share of time any kernel ran
  double mem_used_bytes = -1, mem_total_bytes = -1;
  double temp_c = -1, power_w = -1, energy_j = -1;
  double sm_clock_mhz = -1, mem_clock_mhz = -1;
  int64_t clock_reasons = -1;  // bits of ClockEventReason, -1 unknown
  int pcie_gen = -1, pcie_width = -1;
  double pcie_tx_bytes_per_s = -1, pcie_rx_bytes_per_s = -1;
  // GPM (Hopper and newer), percent 0-100, over the interval since the previous GPM sample.
  double sm_active_pct = -1, sm_occupancy_pct = -1, tensor_active_pct = -1, dram_bw_pct = -1;
  std::vector<GpuProcess> processes;
  std::vector<DriverSample> util_samples;  // new driver samples since the previous tick
};

struct PressureReading {  // /proc/pressure/cpu "some" line
  double avg10 = -1, avg60 = -1;
  double total_us = -1;
};

struct HostReading {
  std::vector<double> core_busy_pct;  // per online core, since the previous tick
  double cpu_busy_pct = -1;           // all cores, 0-100
  double mem_total_bytes = -1, mem_available_bytes = -1;
  PressureReading cpu_pressure;
  int cpu_cores_usable = 0;           // affinity of the root (or of us)
  double cpu_budget_cores = -1;       // min(affinity, cgroup cpu.max quota)
  double shm_total_bytes = -1, shm_used_bytes = -1;
};

struct ProcessReading {
  pid_t pid = 0, ppid = 0;
  std::string comm;  // may hold spaces and parentheses
  char state = '?';
  // 100 = one core, since the previous reading (can exceed 100). With the rest of the CPU of its
  // children that exited meanwhile (host_sampler.h): a tree's sum holds short-lived workers.
  double cpu_pct = -1;
  double sys_pct = -1;  // ... of it in the kernel (stime)
  double minflt_per_s = -1;  // minor page faults per second since the previous reading
  double rss_bytes = -1;
  int threads = 0;
  int last_cpu = -1;
  uint64_t voluntary_switches = 0, nonvoluntary_switches = 0;
  double nonvoluntary_per_s = -1;
  double read_bytes = -1, write_bytes = -1;  // /proc/PID/io (same uid only)
  double run_delay_ms_per_s = -1;            // schedstat: waiting on a run queue
  std::vector<std::string> thread_names;     // distinct task comms, e.g. pt_autograd_0
};

struct Tick {
  double unix_s = 0;  // wall clock, for records
  double t_s = 0;     // monotonic seconds since the sampler started
  std::vector<GpuReading> gpus;
  HostReading host;
  std::vector<ProcessReading> processes;  // the tree under the root PID (empty without one)
  bool processes_fresh = false;           // the tree was read at this tick (it runs slower)
};

}  // namespace ts::sample
