#pragma once
// The sampler: every GPU (NVML, loaded at run time) and the host (/proc), read together at
// a fixed interval, kept as ring-buffer time series and summarised for the rules.
//
// Usage (the `run` layer follows a training job's process tree while it runs):
//   Sampler s({.interval = 100ms, .root_pid = child});
//   s.start();                 // background thread
//   ... job runs ...
//   s.stop();
//   Summary sum = s.summary(); // -> diagnose::SamplesEvidence in the run layer
// `watch` and `snapshot` call tick() themselves instead of start().
//
// The sample layer depends on nothing of ours but util: the run layer converts Summary to
// diagnose::SamplesEvidence field by field (the names match).
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sample/pattern.h"
#include "sample/readings.h"
#include "sample/series.h"

namespace ts::sample {

struct SamplerConfig {
  std::chrono::milliseconds interval{100};
  pid_t root_pid = 0;  // follow this process and its descendants; 0: no process tree
  // The process tree, temperature, power, clocks, PCIe and GPU processes change slowly and
  // cost more to read: they are read at this interval (>= interval). Utilisation, GPM and
  // /proc/stat are read at every tick.
  std::chrono::milliseconds slow_interval{500};
  bool use_nvml = true;
  std::string nvml_library;   // "" = $TRAINSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1
  std::string proc_root = "/proc";
  std::string shm_path = "/dev/shm";
  size_t history = 6000;      // points kept per metric (10 min at 10 Hz)
  bool thread_names = true;   // read /proc/PID/task/*/comm for the tree's processes
};

// Per-GPU summary over the whole sampling run.
struct GpuSummary {
  int index = 0;
  std::string name;
  bool lost = false;
  double util_mean_pct = -1, util_p10_pct = -1, util_p90_pct = -1;
  double sm_active_mean_pct = -1, tensor_active_mean_pct = -1, dram_bw_mean_pct = -1;
  Pattern pattern;
  double mem_used_max_bytes = -1, mem_total_bytes = -1;
  double temp_max_c = -1, power_mean_w = -1;
  uint64_t clock_reasons_seen = 0;  // OR of reason bits, GpuIdle excluded
  double throttled_pct = 0;         // share of readings with a power/thermal reason
  double driver_sample_period_ms = -1;  // measured from nvmlDeviceGetSamples timestamps
};

// The numbers of diagnose::SamplesEvidence, same names and units.
struct Summary {
  double duration_s = 0;
  int ticks = 0;
  int gpus = 0;
  bool nvml = false;
  std::string nvml_error;  // why NVML is absent ("" when present)
  double gpu_util_mean_pct = -1, gpu_util_p10_pct = -1, gpu_util_p90_pct = -1;
  double sm_active_mean_pct = -1, tensor_active_mean_pct = -1;
  std::string gpu_pattern = "unknown";  // idle | sawtooth | steady-high | steady-low | irregular | unknown
  double sawtooth_period_ms = 0, sawtooth_duty_pct = 0;
  std::string pattern_reading;  // describe(pattern)
  double gpu_mem_used_max_bytes = -1, gpu_mem_total_bytes = -1;
  double temp_max_c = -1, power_mean_w = -1;
  uint64_t throttle_reasons_seen = 0;
  double throttled_pct = 0;
  int cpu_cores = 0;
  double cpu_budget_cores = 0;
  double host_cpu_mean_pct = -1;
  double process_tree_cpu_mean_pct = -1, process_tree_cpu_max_pct = -1;
  // Peak of what the job's processes wanted: CPU used plus time their main threads waited on a
  // run queue (/proc/PID/schedstat), 100 = one core. On a host shared with other work the job
  // may get less CPU than it asks for; the demand still shows it has no idle core to use.
  double process_tree_cpu_demand_max_pct = -1;
  int process_count = 0;  // most processes seen at once in the tree
  double nonvoluntary_switches_per_s = 0;
  int threads_total = 0;  // most threads seen at once in the tree
  double shm_total_bytes = -1, shm_used_max_bytes = -1;
  std::vector<GpuSummary> per_gpu;  // the GPU chosen for the top-level fields is `primary_gpu`
  int primary_gpu = -1;
};

// Series kept per GPU and for the host (copies are handed out under the lock).
struct GpuHistory {
  Series util, sm_active, tensor_active, mem_used, power, temp;
  Series driver_util;  // driver-buffered samples, driver timestamps in seconds
  explicit GpuHistory(size_t cap)
      : util(cap), sm_active(cap), tensor_active(cap), mem_used(cap), power(cap), temp(cap),
        driver_util(cap) {}
};
struct HostHistory {
  // tree_cpu and tree_demand (CPU used + run-queue wait, -1 where schedstat is missing) come at
  // each process reading (the slow tick): a point covers the time since the one before it.
  // tree_sys and tree_minflt (the kernel's part of tree_cpu; minor page faults per second) too.
  Series cpu_busy, tree_cpu, tree_demand, tree_sys, tree_minflt;
  explicit HostHistory(size_t cap)
      : cpu_busy(cap), tree_cpu(cap), tree_demand(cap), tree_sys(cap), tree_minflt(cap) {}
};

class NvmlSampler;
class HostSampler;

class Sampler {
 public:
  explicit Sampler(SamplerConfig cfg = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // NVML state: absent (with the reason) on machines without an NVIDIA driver.
  bool nvml_available() const;
  const std::string& nvml_error() const;
  std::string driver_version() const;
  const std::vector<GpuInfo>& gpus() const;

  // One reading now (used by snapshot and watch, and by the background thread).
  Tick tick();

  // Background sampling at cfg.interval; `on_tick` (optional) sees every tick on the
  // sampler thread (the recorder writes to SQLite/CSV there).
  void start(std::function<void(const Tick&)> on_tick = {});
  void stop();
  bool running() const { return running_; }
  // The first exception `on_tick` threw ("" if none); it is not called again after one.
  std::string callback_error() const;

  Summary summary() const;
  // The pattern of one GPU over the last `seconds` (0: all history kept).
  static Pattern gpu_pattern(const GpuHistory& h, double seconds = 0);
  // Off by default: nvmlDeviceGetPcieThroughput blocks ~20 ms per call (snapshot turns it on).
  void set_pcie_throughput(bool on);
  std::vector<GpuHistory> gpu_history() const;
  HostHistory host_history() const;
  Tick last_tick() const;
  const SamplerConfig& config() const { return cfg_; }

 private:
  void accumulate(const Tick& t);
  void loop();

  SamplerConfig cfg_;
  std::unique_ptr<NvmlSampler> nvml_;
  std::unique_ptr<HostSampler> host_;
  std::chrono::steady_clock::time_point t0_;
  std::chrono::steady_clock::time_point last_slow_{};
  int ticks_ = 0;
  HostReading slow_host_;
  std::vector<ProcessReading> last_procs_;

  mutable std::mutex mu_;
  struct Acc;
  std::unique_ptr<Acc> acc_;
  std::vector<GpuHistory> gpu_hist_;
  HostHistory host_hist_;
  Tick last_;

  std::thread thread_;
  std::function<void(const Tick&)> on_tick_;
  std::string callback_error_;
  std::atomic<bool> running_{false}, stop_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;
};

}  // namespace ts::sample
