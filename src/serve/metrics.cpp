#include "serve/metrics.h"

#include <sys/stat.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "sample/procfs.h"
#include "util/private_dir.h"

namespace ts::serve {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace

void ThrottleAccumulator::add(size_t gpu, int64_t reasons, double dt_s) {
  if (gpu >= seconds_.size()) seconds_.resize(gpu + 1, {});
  if (reasons < 0 || dt_s <= 0) return;
  for (size_t b = 0; b < kReasonNames.size(); ++b)
    if (reasons & (int64_t{1} << b)) seconds_[gpu][b] += dt_s;
}

double ThrottleAccumulator::seconds(size_t gpu, size_t bit) const {
  return gpu < seconds_.size() && bit < kReasonNames.size() ? seconds_[gpu][bit] : 0;
}

std::string render_metrics(const ScrapeInput& in) {
  Exposition e;
  using T = MetricType;
  const Labels host{{"Hostname", in.hostname}};

  e.family("trainscope_build_info", T::gauge, "trainscope version; always 1");
  e.sample("trainscope_build_info", {{"version", "0.1.0"}, {"Hostname", in.hostname}}, 1);
  e.family("trainscope_nvml_up", T::gauge, "1 when the NVIDIA driver (NVML) answers, 0 when it is absent");
  e.sample("trainscope_nvml_up", host, in.nvml ? 1 : 0);

  // ---- GPUs: one series per GPU, labelled like dcgm-exporter's.
  e.family("trainscope_gpu_info", T::gauge, "GPU identity and driver; always 1");
  e.family("trainscope_gpu_up", T::gauge, "1 while the GPU answers, 0 once NVML reported it lost");
  e.family("trainscope_gpu_utilization_ratio", T::gauge,
           "Share of the last sample period in which any kernel ran (nvidia-smi GPU-Util, DCGM_FI_DEV_GPU_UTIL), 0-1");
  e.family("trainscope_gpu_memory_utilization_ratio", T::gauge, "Share of time device memory was read or written, 0-1");
  e.family("trainscope_gpu_sm_active_ratio", T::gauge,
           "GPM SM activity (Hopper+), 0-1: how much of the GPU kernels occupy (DCGM_FI_PROF_SM_ACTIVE)");
  e.family("trainscope_gpu_sm_occupancy_ratio", T::gauge, "GPM SM occupancy (Hopper+), 0-1 (DCGM_FI_PROF_SM_OCCUPANCY)");
  e.family("trainscope_gpu_tensor_active_ratio", T::gauge,
           "GPM tensor-pipe activity (Hopper+), 0-1 (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)");
  e.family("trainscope_gpu_dram_active_ratio", T::gauge, "GPM DRAM bandwidth utilisation (Hopper+), 0-1 (DCGM_FI_PROF_DRAM_ACTIVE)");
  e.family("trainscope_gpu_memory_used_bytes", T::gauge, "Device memory in use");
  e.family("trainscope_gpu_memory_total_bytes", T::gauge, "Device memory size");
  e.family("trainscope_gpu_temperature_celsius", T::gauge, "GPU core temperature");
  e.family("trainscope_gpu_power_watts", T::gauge, "Power draw");
  e.family("trainscope_gpu_power_limit_watts", T::gauge, "Enforced power limit");
  e.family("trainscope_gpu_energy_joules_total", T::counter, "Energy used since the driver loaded (rate() gives watts without aliasing)");
  e.family("trainscope_gpu_sm_clock_hertz", T::gauge, "SM clock");
  e.family("trainscope_gpu_sm_clock_max_hertz", T::gauge, "Maximum SM clock");
  e.family("trainscope_gpu_memory_clock_hertz", T::gauge, "Memory clock");
  e.family("trainscope_gpu_clock_event_seconds_total", T::counter,
           "Time with each clock-event (throttle) reason active, integrated by trainscope serve at its sampling interval");
  e.family("trainscope_gpu_pcie_link_generation", T::gauge, "Current PCIe link generation (drops at idle to save power)");
  e.family("trainscope_gpu_pcie_link_generation_max", T::gauge, "Maximum PCIe link generation");
  e.family("trainscope_gpu_pcie_link_width", T::gauge, "Current PCIe link width (lanes)");
  e.family("trainscope_gpu_pcie_link_width_max", T::gauge, "Maximum PCIe link width (lanes)");
  e.family("trainscope_gpu_pcie_transmit_bytes_per_second", T::gauge, "PCIe traffic from the GPU (NVML 20 ms sample)");
  e.family("trainscope_gpu_pcie_receive_bytes_per_second", T::gauge, "PCIe traffic to the GPU (NVML 20 ms sample)");
  e.family("trainscope_gpu_processes", T::gauge, "Compute processes on the GPU");

  for (size_t i = 0; i < in.gpus.size(); ++i) {
    const auto& info = in.gpus[i];
    Labels l{{"gpu", std::to_string(info.index)},
             {"UUID", info.uuid},
             {"device", fmt::format("nvidia{}", info.index)},
             {"modelName", info.name},
             {"pci_bus_id", info.pci_bus_id},
             {"Hostname", in.hostname}};
    Labels il = l;
    il.emplace_back("driver_version", in.driver_version);
    e.sample("trainscope_gpu_info", il, 1);
    const sample::GpuReading* r = nullptr;
    for (const auto& g : in.tick.gpus)
      if (g.index == info.index) r = &g;
    e.sample("trainscope_gpu_up", l, r && r->lost ? 0 : 1);
    if (info.mem_total_bytes >= 0) e.sample("trainscope_gpu_memory_total_bytes", l, info.mem_total_bytes);
    if (info.sm_clock_max_mhz >= 0) e.sample("trainscope_gpu_sm_clock_max_hertz", l, info.sm_clock_max_mhz * 1e6);
    if (info.power_limit_w >= 0) e.sample("trainscope_gpu_power_limit_watts", l, info.power_limit_w);
    if (info.pcie_gen_max >= 0) e.sample("trainscope_gpu_pcie_link_generation_max", l, info.pcie_gen_max);
    if (info.pcie_width_max >= 0) e.sample("trainscope_gpu_pcie_link_width_max", l, info.pcie_width_max);
    if (in.throttle) {
      for (size_t b = 0; b < kReasonNames.size(); ++b) {
        Labels rl = l;
        rl.emplace_back("reason", kReasonNames[b]);
        e.sample("trainscope_gpu_clock_event_seconds_total", rl, in.throttle->seconds(i, b));
      }
    }
    if (!r || r->lost) continue;
    auto ratio = [&](const char* name, double pct) {
      if (pct >= 0) e.sample(name, l, pct / 100.0);
    };
    auto gauge = [&](const char* name, double v, double scale = 1) {
      if (v >= 0) e.sample(name, l, v * scale);
    };
    ratio("trainscope_gpu_utilization_ratio", r->util_pct);
    ratio("trainscope_gpu_memory_utilization_ratio", r->mem_util_pct);
    ratio("trainscope_gpu_sm_active_ratio", r->sm_active_pct);
    ratio("trainscope_gpu_sm_occupancy_ratio", r->sm_occupancy_pct);
    ratio("trainscope_gpu_tensor_active_ratio", r->tensor_active_pct);
    ratio("trainscope_gpu_dram_active_ratio", r->dram_bw_pct);
    gauge("trainscope_gpu_memory_used_bytes", r->mem_used_bytes);
    gauge("trainscope_gpu_temperature_celsius", r->temp_c);
    gauge("trainscope_gpu_power_watts", r->power_w);
    gauge("trainscope_gpu_energy_joules_total", r->energy_j);
    gauge("trainscope_gpu_sm_clock_hertz", r->sm_clock_mhz, 1e6);
    gauge("trainscope_gpu_memory_clock_hertz", r->mem_clock_mhz, 1e6);
    gauge("trainscope_gpu_pcie_link_generation", r->pcie_gen);
    gauge("trainscope_gpu_pcie_link_width", r->pcie_width);
    gauge("trainscope_gpu_pcie_transmit_bytes_per_second", r->pcie_tx_bytes_per_s);
    gauge("trainscope_gpu_pcie_receive_bytes_per_second", r->pcie_rx_bytes_per_s);
    e.sample("trainscope_gpu_processes", l, static_cast<double>(r->processes.size()));
  }

  // ---- Host.
  const auto& h = in.tick.host;
  e.family("trainscope_host_cpu_seconds_total", T::counter,
           "CPU time of all cores since boot from /proc/stat; mode busy or idle (idle includes iowait)");
  if (in.cpu_busy_seconds >= 0) {
    e.sample("trainscope_host_cpu_seconds_total", {{"mode", "busy"}, {"Hostname", in.hostname}}, in.cpu_busy_seconds);
    e.sample("trainscope_host_cpu_seconds_total", {{"mode", "idle"}, {"Hostname", in.hostname}}, in.cpu_idle_seconds);
  }
  e.family("trainscope_host_cpu_busy_ratio", T::gauge, "All cores busy over the last sampling interval, 0-1");
  if (h.cpu_busy_pct >= 0) e.sample("trainscope_host_cpu_busy_ratio", host, h.cpu_busy_pct / 100.0);
  e.family("trainscope_host_cpus", T::gauge, "Cores this process may run on (affinity)");
  if (h.cpu_cores_usable > 0) e.sample("trainscope_host_cpus", host, h.cpu_cores_usable);
  e.family("trainscope_host_cpu_budget_cores", T::gauge, "Cores really usable: min(affinity, cgroup cpu.max quota)");
  if (h.cpu_budget_cores > 0) e.sample("trainscope_host_cpu_budget_cores", host, h.cpu_budget_cores);
  e.family("trainscope_host_cpu_pressure_waiting_seconds_total", T::counter,
           "PSI: time some task waited for a CPU (/proc/pressure/cpu 'some' total)");
  if (h.cpu_pressure.total_us >= 0) e.sample("trainscope_host_cpu_pressure_waiting_seconds_total", host, h.cpu_pressure.total_us / 1e6);
  e.family("trainscope_host_memory_total_bytes", T::gauge, "MemTotal");
  if (h.mem_total_bytes >= 0) e.sample("trainscope_host_memory_total_bytes", host, h.mem_total_bytes);
  e.family("trainscope_host_memory_available_bytes", T::gauge, "MemAvailable");
  if (h.mem_available_bytes >= 0) e.sample("trainscope_host_memory_available_bytes", host, h.mem_available_bytes);
  e.family("trainscope_host_shm_total_bytes", T::gauge, "/dev/shm size (DataLoader workers pass batches through it)");
  if (h.shm_total_bytes >= 0) e.sample("trainscope_host_shm_total_bytes", host, h.shm_total_bytes);
  e.family("trainscope_host_shm_used_bytes", T::gauge, "/dev/shm in use");
  if (h.shm_used_bytes >= 0) e.sample("trainscope_host_shm_used_bytes", host, h.shm_used_bytes);

  // ---- Training jobs (trainscope run), one label set per job and rank.
  e.family("trainscope_training_info", T::gauge, "A trainscope run active on this host; always 1");
  e.family("trainscope_training_step_duration_seconds", T::histogram, "Training step wall time");
  e.family("trainscope_training_steps_total", T::counter, "Training steps completed");
  e.family("trainscope_training_samples_total", T::counter, "Training samples processed");
  e.family("trainscope_training_data_wait_seconds_total", T::counter, "Time the loop waited on the DataLoader");
  e.family("trainscope_training_data_wait_ratio", T::gauge,
           "Share of step time spent waiting on the DataLoader over the run's recent window, 0-1");
  e.family("trainscope_training_samples_per_second", T::gauge, "Throughput over the run's recent window");
  e.family("trainscope_training_step_time_mean_seconds", T::gauge, "Mean step time over the run's recent window");
  e.family("trainscope_training_status_age_seconds", T::gauge, "Seconds since the run last updated its live status");
  e.family("trainscope_training_top_finding_info", T::gauge,
           "The run's current top finding (id, severity, title); always 1");
  e.family("trainscope_training_top_finding_gain_ratio", T::gauge,
           "Estimated share of step time the top finding's fix would recover, 0-1");
  for (const auto& s : in.live) {
    Labels l{{"pid", std::to_string(s.child_pid > 0 ? s.child_pid : s.pid)},
             {"rank", s.rank >= 0 ? std::to_string(s.rank) : ""},
             {"run_id", s.run_id},
             {"Hostname", in.hostname}};
    // A node of a multi-node job (run --job-dir): the job's identity and the node's folder name.
    // Not "job": Prometheus's own target label, which would rename ours to exported_job.
    if (!s.job.empty()) l.emplace_back("job_id", s.job);
    if (!s.node.empty()) l.emplace_back("node", s.node);
    Labels il = l;
    il.emplace_back("command", s.command);
    il.emplace_back("local_rank", s.local_rank >= 0 ? std::to_string(s.local_rank) : "");
    il.emplace_back("world_size", s.world_size >= 0 ? std::to_string(s.world_size) : "");
    e.sample("trainscope_training_info", il, 1);
    if (!s.step_buckets.empty() && s.step_count >= 0 && s.step_seconds_sum >= 0)
      e.histogram("trainscope_training_step_duration_seconds", l, s.step_buckets, s.step_seconds_sum, s.step_count);
    if (s.steps_total >= 0) e.sample("trainscope_training_steps_total", l, s.steps_total);
    if (s.samples_total >= 0) e.sample("trainscope_training_samples_total", l, s.samples_total);
    if (s.data_wait_seconds_total >= 0) e.sample("trainscope_training_data_wait_seconds_total", l, s.data_wait_seconds_total);
    if (s.data_wait_ratio >= 0) e.sample("trainscope_training_data_wait_ratio", l, s.data_wait_ratio);
    if (s.samples_per_second >= 0) e.sample("trainscope_training_samples_per_second", l, s.samples_per_second);
    if (s.step_time_mean_s >= 0) e.sample("trainscope_training_step_time_mean_seconds", l, s.step_time_mean_s);
    if (s.updated_unix > 0) e.sample("trainscope_training_status_age_seconds", l, std::max(0.0, in.now_unix - s.updated_unix));
    if (s.has_finding) {
      Labels fl = l;
      fl.emplace_back("id", s.finding_id);
      fl.emplace_back("severity", s.finding_severity);
      fl.emplace_back("title", s.finding_title);
      e.sample("trainscope_training_top_finding_info", fl, 1);
      if (s.finding_gain_ratio >= 0) e.sample("trainscope_training_top_finding_gain_ratio", l, s.finding_gain_ratio);
    }
  }
  e.family("trainscope_training_runs", T::gauge, "trainscope run jobs (ranks) active on this host");
  e.sample("trainscope_training_runs", host, static_cast<double>(in.live.size()));
  return e.text();
}

MetricsCollector::MetricsCollector(MetricsOptions opt) : opt_(std::move(opt)) {
  if (opt_.live_dir.empty()) opt_.live_dir = sample::live_dir();
  if (opt_.hostname.empty()) opt_.hostname = host_name();
  sample::SamplerConfig cfg;
  cfg.interval = opt_.interval;
  cfg.slow_interval = opt_.interval;
  cfg.nvml_library = opt_.nvml_library;
  cfg.history = 16;  // serve keeps no history: Prometheus does
  sampler_ = std::make_unique<sample::Sampler>(cfg);
}

MetricsCollector::~MetricsCollector() { stop(); }

void MetricsCollector::start() {
  sampler_->start([this](const sample::Tick& t) { on_tick(t); });
}

void MetricsCollector::stop() {
  if (sampler_ && sampler_->running()) sampler_->stop();
}

void MetricsCollector::on_tick(const sample::Tick& t) {
  std::lock_guard<std::mutex> lock(mu_);
  double dt = last_t_s_ < 0 ? 0 : t.t_s - last_t_s_;
  last_t_s_ = t.t_s;
  for (const auto& g : t.gpus) throttle_.add(static_cast<size_t>(g.index), g.clock_reasons, dt);
}

std::string MetricsCollector::scrape() {
  ScrapeInput in;
  in.hostname = opt_.hostname;
  in.nvml = sampler_->nvml_available();
  in.nvml_error = sampler_->nvml_error();
  in.driver_version = sampler_->driver_version();
  in.gpus = sampler_->gpus();
  in.tick = sampler_->last_tick();
  std::string stat;
  if (sample::procfs::read_text("/proc/stat", stat)) {
    static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    for (const auto& c : sample::procfs::parse_stat(stat)) {
      if (c.core != -1) continue;
      in.cpu_busy_seconds = static_cast<double>(c.busy) / hz;
      in.cpu_idle_seconds = static_cast<double>(c.total - c.busy) / hz;
    }
  }
  in.now_unix = unix_now();
  std::vector<std::string> skipped;
  in.live = read_live_statuses(opt_.live_dir, in.now_unix, &skipped);
  std::lock_guard<std::mutex> lock(mu_);
  // A live directory we refuse to read (not private to us) is said once on stderr, not per scrape.
  struct stat st;
  std::string refusal = ::lstat(opt_.live_dir.c_str(), &st) == 0 ? private_dir_problem(opt_.live_dir) : "";
  if (refusal != live_refusal_) {
    if (!refusal.empty()) fmt::print(stderr, "trainscope serve: {}; live job metrics off\n", refusal);
    live_refusal_ = refusal;
  }
  in.throttle = &throttle_;
  return render_metrics(in);
}

}  // namespace ts::serve
