#pragma once
// What `trainscope serve` exposes: GPU metrics (NVML through the sampler) with labels that
// line up with dcgm-exporter's (gpu, UUID, device, modelName, pci_bus_id, Hostname), host
// metrics from /proc, and, while `trainscope run` jobs are active on the host, their training
// metrics from the live-status hand-off (live_status.h). Names and units follow Prometheus
// conventions: base units (seconds, bytes, joules, celsius, hertz), ratios 0-1, and counters
// ending in _total for anything that accumulates (energy, throttle time, CPU time, steps).
// docs/PROMETHEUS.md lists every metric.
#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sample/sampler.h"
#include "serve/exposition.h"
#include "serve/live_status.h"

namespace ts::serve {

struct MetricsOptions {
  std::chrono::milliseconds interval{500};  // background sampling (throttle-time integration)
  std::string live_dir;                     // "" = sample::live_dir()
  std::string nvml_library;                 // "" = the sampler's default lookup
  std::string hostname;                     // "" = gethostname()
};

// Clock-event reason bits and their label values, in bit order (nvml.h nvmlClocksEventReasons).
inline constexpr std::array<const char*, 9> kReasonNames = {
    "gpu_idle",   "applications_clocks", "sw_power_cap", "hw_slowdown",   "sync_boost",
    "sw_thermal", "hw_thermal",          "hw_power_brake", "display_clocks"};

// Time each GPU spent with each clock-event reason active, integrated tick by tick (the
// reasons read at a tick are held for the interval before it).
class ThrottleAccumulator {
 public:
  void add(size_t gpu, int64_t reasons, double dt_s);
  double seconds(size_t gpu, size_t bit) const;
  size_t gpus() const { return seconds_.size(); }

 private:
  std::vector<std::array<double, kReasonNames.size()>> seconds_;
};

// Builds the exposition from one tick, the static GPU info, throttle totals and live statuses.
// Pure: the HTTP layer and the tests both call it.
struct ScrapeInput {
  std::string hostname;
  bool nvml = false;
  std::string nvml_error, driver_version;
  std::vector<sample::GpuInfo> gpus;
  sample::Tick tick;
  const ThrottleAccumulator* throttle = nullptr;
  // /proc/stat aggregate since boot, in seconds.
  double cpu_busy_seconds = -1, cpu_idle_seconds = -1;
  std::vector<LiveStatus> live;
  double now_unix = 0;
};
std::string render_metrics(const ScrapeInput& in);

// Owns the sampler thread and answers scrapes.
class MetricsCollector {
 public:
  explicit MetricsCollector(MetricsOptions opt);
  ~MetricsCollector();
  void start();
  void stop();
  std::string scrape();
  bool nvml_available() const { return sampler_->nvml_available(); }
  const std::string& nvml_error() const { return sampler_->nvml_error(); }
  const std::string& live_dir() const { return opt_.live_dir; }

 private:
  void on_tick(const sample::Tick& t);
  MetricsOptions opt_;
  std::unique_ptr<sample::Sampler> sampler_;
  mutable std::mutex mu_;
  ThrottleAccumulator throttle_;
  double last_t_s_ = -1;
  std::string live_refusal_;  // the live directory's problem last said on stderr
};

}  // namespace ts::serve
