#include "sample/sampler.h"

#include <algorithm>
#include <exception>
#include <set>

#include "sample/host_sampler.h"
#include "sample/nvml_sampler.h"
#include "sample/window_stats.h"
#include "util/stats.h"

namespace ts::sample {

using std::chrono::steady_clock;

// Whole-run accumulators (the ring buffers only hold the recent past).
struct Sampler::Acc {
  struct Gpu {
    PercentHistogram util;
    double sm_sum = 0, tensor_sum = 0, dram_sum = 0;
    size_t sm_n = 0, tensor_n = 0, dram_n = 0;
    double mem_max = -1, mem_total = -1, temp_max = -1, power_sum = 0;
    size_t power_n = 0, slow_n = 0, throttled_n = 0;
    uint64_t reasons = 0;
    bool lost = false;
    std::vector<double> driver_dt_ms;  // first few hundred driver sample gaps
    uint64_t last_driver_us = 0;
    std::set<uint32_t> pids;
  };
  std::vector<Gpu> gpus;
  int ticks = 0;
  double first_t = -1, last_t = 0;
  double host_sum = 0;
  size_t host_n = 0;
  double tree_sum = 0, tree_max = -1, tree_demand_max = -1;
  size_t tree_n = 0;
  int proc_max = 0, threads_max = 0;
  double nonvol_sum = 0;
  size_t nonvol_n = 0;
  int cores = 0;
  double budget = 0, shm_total = -1, shm_used_max = -1;
  std::set<pid_t> tree_pids;
};

Sampler::Sampler(SamplerConfig cfg)
    : cfg_(std::move(cfg)), acc_(std::make_unique<Acc>()), host_hist_(cfg_.history) {
  if (cfg_.slow_interval < cfg_.interval) cfg_.slow_interval = cfg_.interval;
  if (cfg_.use_nvml) {
    nvml_ = std::make_unique<NvmlSampler>(cfg_.nvml_library);
    for (size_t i = 0; i < nvml_->gpus().size(); ++i) gpu_hist_.emplace_back(cfg_.history);
    acc_->gpus.resize(nvml_->gpus().size());
  }
  host_ = std::make_unique<HostSampler>(cfg_.proc_root, cfg_.shm_path, cfg_.root_pid);
  t0_ = steady_clock::now();
}

Sampler::~Sampler() { stop(); }

bool Sampler::nvml_available() const { return nvml_ && nvml_->ok(); }

const std::string& Sampler::nvml_error() const {
  static const std::string off = "NVML not used";
  return nvml_ ? nvml_->error() : off;
}

std::string Sampler::driver_version() const { return nvml_ ? nvml_->driver_version() : ""; }

const std::vector<GpuInfo>& Sampler::gpus() const {
  static const std::vector<GpuInfo> none;
  return nvml_ ? nvml_->gpus() : none;
}

void Sampler::set_pcie_throughput(bool on) {
  if (nvml_) nvml_->set_pcie_throughput(on);
}

Tick Sampler::tick() {
  const auto now = steady_clock::now();
  const bool slow = ticks_ == 0 || now - last_slow_ >= cfg_.slow_interval;
  Tick t;
  t.unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  t.t_s = std::chrono::duration<double>(now - t0_).count();
  if (nvml_ && nvml_->ok()) t.gpus = nvml_->read(slow, now);
  if (slow) {
    host_->read_slow(slow_host_);
    last_slow_ = now;
  }
  t.host = slow_host_;  // slow fields carried forward between slow ticks
  host_->read_cpu(t.host);
  if (cfg_.root_pid > 0) {
    if (slow) {
      t.processes = host_->read_tree(t.t_s, cfg_.thread_names);
      t.processes_fresh = true;
      last_procs_ = t.processes;
    } else {
      t.processes = last_procs_;
    }
  }
  ++ticks_;
  accumulate(t);
  return t;
}

void Sampler::accumulate(const Tick& t) {
  std::lock_guard lk(mu_);
  Acc& a = *acc_;
  ++a.ticks;
  if (a.first_t < 0) a.first_t = t.t_s;
  a.last_t = t.t_s;
  for (const auto& g : t.gpus) {
    if (g.index < 0 || static_cast<size_t>(g.index) >= a.gpus.size()) continue;
    Acc::Gpu& ag = a.gpus[g.index];
    GpuHistory& h = gpu_hist_[g.index];
    if (g.lost) {
      ag.lost = true;
      continue;
    }
    if (g.util_pct >= 0) {
      ag.util.add(g.util_pct);
      h.util.push(t.t_s, g.util_pct);
    }
    if (g.sm_active_pct >= 0) {
      ag.sm_sum += g.sm_active_pct, ++ag.sm_n;
      h.sm_active.push(t.t_s, g.sm_active_pct);
    }
    if (g.tensor_active_pct >= 0) {
      ag.tensor_sum += g.tensor_active_pct, ++ag.tensor_n;
      h.tensor_active.push(t.t_s, g.tensor_active_pct);
    }
    if (g.dram_bw_pct >= 0) ag.dram_sum += g.dram_bw_pct, ++ag.dram_n;
    for (const auto& s : g.util_samples) {
      if (ag.last_driver_us && s.t_us > ag.last_driver_us && ag.driver_dt_ms.size() < 512)
        ag.driver_dt_ms.push_back(static_cast<double>(s.t_us - ag.last_driver_us) / 1000.0);
      ag.last_driver_us = std::max(ag.last_driver_us, s.t_us);
      h.driver_util.push(static_cast<double>(s.t_us) / 1e6, s.value);
    }
    if (g.mem_used_bytes >= 0) {
      ag.mem_max = std::max(ag.mem_max, g.mem_used_bytes);
      h.mem_used.push(t.t_s, g.mem_used_bytes);
    }
    if (g.mem_total_bytes > 0) ag.mem_total = g.mem_total_bytes;
    if (g.temp_c >= 0) {
      ag.temp_max = std::max(ag.temp_max, g.temp_c);
      h.temp.push(t.t_s, g.temp_c);
    }
    if (g.power_w >= 0) {
      ag.power_sum += g.power_w, ++ag.power_n;
      h.power.push(t.t_s, g.power_w);
    }
    if (g.clock_reasons >= 0) {
      ++ag.slow_n;
      uint64_t r = static_cast<uint64_t>(g.clock_reasons);
      ag.reasons |= r & ~static_cast<uint64_t>(kReasonGpuIdle);
      if (r & kSlowdownReasons) ++ag.throttled_n;
    }
    for (const auto& p : g.processes) ag.pids.insert(p.pid);
  }
  if (t.host.cpu_busy_pct >= 0 && a.ticks > 1) {  // the first reading is "since boot"
    a.host_sum += t.host.cpu_busy_pct, ++a.host_n;
    host_hist_.cpu_busy.push(t.t_s, t.host.cpu_busy_pct);
  }
  a.cores = t.host.cpu_cores_usable;
  a.budget = t.host.cpu_budget_cores;
  if (t.host.shm_total_bytes >= 0) a.shm_total = t.host.shm_total_bytes;
  a.shm_used_max = std::max(a.shm_used_max, t.host.shm_used_bytes);
  if (t.processes_fresh && !t.processes.empty()) {
    double cpu = 0, nonvol = 0, queued = 0, sys = 0, minflt = 0;
    bool have_rate = false, have_queue = false;
    int threads = 0;
    for (const auto& p : t.processes) {
      a.tree_pids.insert(p.pid);
      threads += p.threads;
      if (p.cpu_pct >= 0) cpu += p.cpu_pct, have_rate = true;
      if (p.sys_pct >= 0) sys += p.sys_pct;
      if (p.minflt_per_s >= 0) minflt += p.minflt_per_s;
      if (p.nonvoluntary_per_s >= 0) nonvol += p.nonvoluntary_per_s;
      // ms per s waiting on a run queue -> % of a core (1000 ms/s = 100%).
      if (p.run_delay_ms_per_s >= 0) queued += p.run_delay_ms_per_s / 10.0, have_queue = true;
    }
    a.proc_max = std::max(a.proc_max, static_cast<int>(t.processes.size()));
    a.threads_max = std::max(a.threads_max, threads);
    if (have_rate) {
      a.tree_sum += cpu, ++a.tree_n;
      a.tree_max = std::max(a.tree_max, cpu);
      if (have_queue) a.tree_demand_max = std::max(a.tree_demand_max, cpu + queued);
      a.nonvol_sum += nonvol, ++a.nonvol_n;
      host_hist_.tree_cpu.push(t.t_s, cpu);
      host_hist_.tree_demand.push(t.t_s, have_queue ? cpu + queued : -1);
      host_hist_.tree_sys.push(t.t_s, sys);
      host_hist_.tree_minflt.push(t.t_s, minflt);
    }
  }
  last_ = t;
}

Summary Sampler::summary() const {
  std::lock_guard lk(mu_);
  const Acc& a = *acc_;
  Summary s;
  s.ticks = a.ticks;
  s.duration_s = a.first_t >= 0 ? a.last_t - a.first_t : 0;
  s.nvml = nvml_available();
  s.nvml_error = s.nvml ? "" : nvml_error();
  s.gpus = static_cast<int>(gpus().size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const Acc::Gpu& ag = a.gpus[i];
    GpuSummary g;
    g.index = static_cast<int>(i);
    g.name = gpus()[i].name;
    g.lost = ag.lost;
    g.util_mean_pct = ag.util.mean();
    g.util_p10_pct = ag.util.percentile(10);
    g.util_p90_pct = ag.util.percentile(90);
    if (ag.sm_n) g.sm_active_mean_pct = ag.sm_sum / ag.sm_n;
    if (ag.tensor_n) g.tensor_active_mean_pct = ag.tensor_sum / ag.tensor_n;
    if (ag.dram_n) g.dram_bw_mean_pct = ag.dram_sum / ag.dram_n;
    g.mem_used_max_bytes = ag.mem_max;
    g.mem_total_bytes = ag.mem_total;
    g.temp_max_c = ag.temp_max;
    if (ag.power_n) g.power_mean_w = ag.power_sum / ag.power_n;
    g.clock_reasons_seen = ag.reasons;
    if (ag.slow_n) g.throttled_pct = 100.0 * ag.throttled_n / ag.slow_n;
    if (!ag.driver_dt_ms.empty()) g.driver_sample_period_ms = median(ag.driver_dt_ms);
    g.pattern = gpu_pattern(gpu_hist_[i]);
    s.per_gpu.push_back(std::move(g));
  }
  // The GPU the job uses (its processes appear there), else the busiest one.
  int primary = -1;
  for (size_t i = 0; i < a.gpus.size() && primary < 0; ++i)
    for (uint32_t pid : a.gpus[i].pids)
      if (a.tree_pids.count(static_cast<pid_t>(pid))) {
        primary = static_cast<int>(i);
        break;
      }
  if (primary < 0 && !s.per_gpu.empty()) {
    // A GPU still answering beats a lost one; then the busiest.
    primary = 0;
    for (size_t i = 1; i < s.per_gpu.size(); ++i) {
      const GpuSummary &a = s.per_gpu[i], &b = s.per_gpu[primary];
      if (a.lost != b.lost ? b.lost : a.util_mean_pct > b.util_mean_pct) primary = static_cast<int>(i);
    }
  }
  s.primary_gpu = primary;
  if (primary >= 0) {
    const GpuSummary& g = s.per_gpu[primary];
    s.gpu_util_mean_pct = g.util_mean_pct;
    s.gpu_util_p10_pct = g.util_p10_pct;
    s.gpu_util_p90_pct = g.util_p90_pct;
    s.sm_active_mean_pct = g.sm_active_mean_pct;
    s.tensor_active_mean_pct = g.tensor_active_mean_pct;
    s.gpu_pattern = g.pattern.kind;
    s.sawtooth_period_ms = g.pattern.period_ms;
    s.sawtooth_duty_pct = g.pattern.duty_pct;
    s.pattern_reading = describe(g.pattern);
    s.gpu_mem_used_max_bytes = g.mem_used_max_bytes;
    s.gpu_mem_total_bytes = g.mem_total_bytes;
    s.temp_max_c = g.temp_max_c;
    s.power_mean_w = g.power_mean_w;
    s.throttle_reasons_seen = g.clock_reasons_seen;
    s.throttled_pct = g.throttled_pct;
  }
  s.cpu_cores = a.cores;
  s.cpu_budget_cores = a.budget;
  if (a.host_n) s.host_cpu_mean_pct = a.host_sum / a.host_n;
  if (a.tree_n) {
    s.process_tree_cpu_mean_pct = a.tree_sum / a.tree_n;
    s.process_tree_cpu_max_pct = a.tree_max;
    s.process_tree_cpu_demand_max_pct = a.tree_demand_max;
  }
  s.process_count = a.proc_max;
  if (a.nonvol_n) s.nonvoluntary_switches_per_s = a.nonvol_sum / a.nonvol_n;
  s.threads_total = a.threads_max;
  s.shm_total_bytes = a.shm_total;
  s.shm_used_max_bytes = a.shm_used_max;
  return s;
}

Pattern Sampler::gpu_pattern(const GpuHistory& h, double seconds) {
  // The driver's own buffered samples resolve a fast sawtooth better than our polls when
  // they are denser; otherwise use what we polled.
  auto polled = h.util.window(seconds);
  auto driver = h.driver_util.window(seconds);
  if (driver.size() >= 8 && driver.size() > polled.size()) return detect_pattern(driver);
  return detect_pattern(polled);
}

std::vector<GpuHistory> Sampler::gpu_history() const {
  std::lock_guard lk(mu_);
  return gpu_hist_;
}

HostHistory Sampler::host_history() const {
  std::lock_guard lk(mu_);
  return host_hist_;
}

std::string Sampler::callback_error() const {
  std::lock_guard lk(mu_);
  return callback_error_;
}

Tick Sampler::last_tick() const {
  std::lock_guard lk(mu_);
  return last_;
}

void Sampler::start(std::function<void(const Tick&)> on_tick) {
  if (running_) return;
  on_tick_ = std::move(on_tick);
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  if (!running_) return;
  {
    std::lock_guard lk(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  running_ = false;
}

void Sampler::loop() {
  auto next = steady_clock::now();
  while (true) {
    Tick t = tick();
    if (on_tick_) {
      // A failing consumer (disk full under the recorder) must not kill the process from
      // the sampler thread: keep its first error for the owner and stop calling it.
      try {
        on_tick_(t);
      } catch (const std::exception& e) {
        std::lock_guard lk(mu_);
        callback_error_ = e.what();
        on_tick_ = nullptr;
      }
    }
    next += cfg_.interval;
    const auto now = steady_clock::now();
    if (next < now) next = now;  // fell behind (a slow tick): do not burst to catch up
    std::unique_lock lk(wake_mu_);
    if (wake_.wait_until(lk, next, [this] { return stop_.load(); })) break;
  }
}

}  // namespace ts::sample
