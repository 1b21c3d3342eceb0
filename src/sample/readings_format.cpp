#include "sample/readings_format.h"

#include <cmath>
#include <ctime>
#include <fmt/format.h>

#include "util/format.h"

namespace ts::sample {

namespace {

// -1 -> JSON null.
void opt(JsonWriter& w, std::string_view k, double v) {
  w.key(k);
  if (v < 0) w.null();
  else w.value(v);
}

std::string pct(double v) { return v < 0 ? "n/a" : fmt::format("{:.0f}%", v); }
std::string bytes(double v) { return v < 0 ? "n/a" : human_bytes(v); }
std::string num(double v) { return v < 0 ? "n/a" : fmt::format("{:.0f}", v); }
// "1755/1980", "1755" without a maximum, "n/a" without either.
std::string of(double cur, double max) {
  if (cur < 0 && max < 0) return "n/a";
  return max < 0 ? num(cur) : num(cur) + "/" + num(max);
}

std::string clock_hms(double unix_s) {
  time_t s = static_cast<time_t>(unix_s);
  std::tm tm{};
  localtime_r(&s, &tm);
  int ms = static_cast<int>((unix_s - std::floor(unix_s)) * 1000);
  return fmt::format("{:02}:{:02}:{:02}.{:03}", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace

void write_json(JsonWriter& w, const SnapshotView& s) {
  const Tick& t = s.tick;
  w.begin_object();
  w.field("unix_ms", static_cast<int64_t>(t.unix_s * 1000.0));
  w.key("nvml").begin_object();
  w.field("available", s.nvml);
  if (!s.nvml) w.field("error", s.nvml_error);
  if (!s.driver_version.empty()) w.field("driver_version", s.driver_version);
  w.end_object();
  w.key("gpus").begin_array();
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const GpuInfo& g = s.gpus[i];
    w.begin_object();
    w.field("index", g.index).field("name", g.name).field("uuid", g.uuid).field("pci_bus_id", g.pci_bus_id);
    w.field("gpm_supported", g.gpm_supported);
    opt(w, "power_limit_w", g.power_limit_w);
    opt(w, "sm_clock_max_mhz", g.sm_clock_max_mhz);
    opt(w, "mem_clock_max_mhz", g.mem_clock_max_mhz);
    opt(w, "pcie_gen_max", g.pcie_gen_max);
    opt(w, "pcie_width_max", g.pcie_width_max);
    if (i < t.gpus.size()) {
      const GpuReading& r = t.gpus[i];
      w.field("lost", r.lost);
      opt(w, "util_pct", r.util_pct);
      opt(w, "mem_util_pct", r.mem_util_pct);
      opt(w, "sm_active_pct", r.sm_active_pct);
      opt(w, "sm_occupancy_pct", r.sm_occupancy_pct);
      opt(w, "tensor_active_pct", r.tensor_active_pct);
      opt(w, "dram_bw_pct", r.dram_bw_pct);
      opt(w, "mem_used_bytes", r.mem_used_bytes);
      opt(w, "mem_total_bytes", r.mem_total_bytes);
      opt(w, "temp_c", r.temp_c);
      opt(w, "power_w", r.power_w);
      opt(w, "energy_j", r.energy_j);
      opt(w, "sm_clock_mhz", r.sm_clock_mhz);
      opt(w, "mem_clock_mhz", r.mem_clock_mhz);
      w.key("clock_reasons");
      if (r.clock_reasons < 0) {
        w.null();
      } else {
        w.begin_object();
        w.field("bits", static_cast<uint64_t>(r.clock_reasons));
        w.field("names", decode_clock_reasons(static_cast<uint64_t>(r.clock_reasons)));
        w.field("slowdown", (static_cast<uint64_t>(r.clock_reasons) & kSlowdownReasons) != 0);
        w.end_object();
      }
      opt(w, "pcie_gen", r.pcie_gen);
      opt(w, "pcie_width", r.pcie_width);
      opt(w, "pcie_tx_bytes_per_s", r.pcie_tx_bytes_per_s);
      opt(w, "pcie_rx_bytes_per_s", r.pcie_rx_bytes_per_s);
      w.key("processes").begin_array();
      for (const auto& p : r.processes) {
        w.begin_object().field("pid", p.pid);
        opt(w, "used_bytes", p.used_bytes);
        w.end_object();
      }
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
  const HostReading& h = t.host;
  w.key("host").begin_object();
  opt(w, "cpu_busy_pct", h.cpu_busy_pct);
  w.array("core_busy_pct", h.core_busy_pct);
  w.field("cpu_cores_usable", h.cpu_cores_usable);
  opt(w, "cpu_budget_cores", h.cpu_budget_cores);
  opt(w, "cpu_pressure_some_avg10", h.cpu_pressure.avg10);
  opt(w, "cpu_pressure_some_avg60", h.cpu_pressure.avg60);
  opt(w, "mem_total_bytes", h.mem_total_bytes);
  opt(w, "mem_available_bytes", h.mem_available_bytes);
  opt(w, "shm_total_bytes", h.shm_total_bytes);
  opt(w, "shm_used_bytes", h.shm_used_bytes);
  w.end_object();
  if (s.root_pid > 0) {
    w.field("root_pid", static_cast<int64_t>(s.root_pid));
    w.key("processes").begin_array();
    for (const auto& p : t.processes) {
      w.begin_object();
      w.field("pid", static_cast<int64_t>(p.pid)).field("ppid", static_cast<int64_t>(p.ppid));
      w.field("comm", p.comm).field("state", std::string(1, p.state));
      opt(w, "cpu_pct", p.cpu_pct);
      opt(w, "rss_bytes", p.rss_bytes);
      w.field("threads", p.threads);
      w.field("voluntary_switches", p.voluntary_switches);
      w.field("nonvoluntary_switches", p.nonvoluntary_switches);
      opt(w, "nonvoluntary_per_s", p.nonvoluntary_per_s);
      opt(w, "read_bytes", p.read_bytes);
      opt(w, "write_bytes", p.write_bytes);
      opt(w, "run_delay_ms_per_s", p.run_delay_ms_per_s);
      w.array("thread_names", p.thread_names);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
}

std::string snapshot_text(const SnapshotView& s) {
  const Tick& t = s.tick;
  std::string o;
  if (!s.nvml) {
    o += fmt::format("GPUs: {}\n", s.nvml_error);
  } else {
    o += fmt::format("NVIDIA driver {}, {} GPU{}\n", s.driver_version, s.gpus.size(), s.gpus.size() == 1 ? "" : "s");
  }
  for (size_t i = 0; i < s.gpus.size() && i < t.gpus.size(); ++i) {
    const GpuInfo& g = s.gpus[i];
    const GpuReading& r = t.gpus[i];
    o += fmt::format("GPU {}  {}  {}  {}{}\n", g.index, g.name, g.pci_bus_id, g.uuid, r.lost ? "  LOST" : "");
    if (r.lost) continue;
    o += fmt::format("  util {} (memory controller {})", pct(r.util_pct), pct(r.mem_util_pct));
    if (g.gpm_supported)
      o += fmt::format("  SM active {}  tensor {}  occupancy {}  DRAM {}", pct(r.sm_active_pct),
                       pct(r.tensor_active_pct), pct(r.sm_occupancy_pct), pct(r.dram_bw_pct));
    else
      o += "  (no GPM: SM/tensor activity needs Hopper or newer)";
    o += "\n";
    o += fmt::format("  memory {} / {}  temp {}  power {}{}  energy {}\n", bytes(r.mem_used_bytes),
                     bytes(r.mem_total_bytes), r.temp_c < 0 ? "n/a" : fmt::format("{:.0f} C", r.temp_c),
                     r.power_w < 0 ? "n/a" : fmt::format("{:.0f} W", r.power_w),
                     g.power_limit_w < 0 ? "" : fmt::format(" / {:.0f} W", g.power_limit_w),
                     r.energy_j < 0 ? "n/a" : fmt::format("{:.1f} kJ", r.energy_j / 1000));
    std::string reasons = r.clock_reasons < 0 ? "n/a" : decode_clock_reasons(static_cast<uint64_t>(r.clock_reasons));
    o += fmt::format("  clocks SM {} MHz  memory {} MHz  clock events: {}\n", of(r.sm_clock_mhz, g.sm_clock_max_mhz),
                     of(r.mem_clock_mhz, g.mem_clock_max_mhz), reasons.empty() ? "none" : reasons);
    o += fmt::format("  PCIe gen {} x{}", of(r.pcie_gen, g.pcie_gen_max), of(r.pcie_width, g.pcie_width_max));
    if (r.pcie_tx_bytes_per_s >= 0)
      o += fmt::format("  tx {}  rx {}", human_rate(r.pcie_tx_bytes_per_s), human_rate(r.pcie_rx_bytes_per_s));
    o += "\n";
    if (!r.processes.empty()) {
      o += "  processes:";
      for (const auto& p : r.processes) o += fmt::format(" {} ({})", p.pid, bytes(p.used_bytes));
      o += "\n";
    }
  }
  const HostReading& h = t.host;
  o += fmt::format("Host: {} cores usable, CPU budget {:.1f} cores, busy {}  per core:", h.cpu_cores_usable,
                   h.cpu_budget_cores, pct(h.cpu_busy_pct));
  for (double c : h.core_busy_pct) o += fmt::format(" {:.0f}", c);
  o += "\n";
  o += fmt::format("  memory {} available of {}  CPU pressure (some, avg10) {}  /dev/shm {} used of {}\n",
                   bytes(h.mem_available_bytes), bytes(h.mem_total_bytes),
                   h.cpu_pressure.avg10 < 0 ? "n/a" : fmt::format("{:.2f}%", h.cpu_pressure.avg10),
                   bytes(h.shm_used_bytes), bytes(h.shm_total_bytes));
  if (s.root_pid > 0) {
    o += fmt::format("Processes under PID {}: {}\n", s.root_pid, t.processes.size());
    o += fmt::format("  {:>7} {:>7} {} {:>6} {:>10} {:>4} {:>8}  {}\n", "PID", "PPID", "S", "CPU%", "RSS", "THR",
                     "NVCSW/s", "NAME [other thread names]");
    for (const auto& p : t.processes) {
      std::string names;
      for (size_t i = 0, shown = 0; i < p.thread_names.size() && shown < 4; ++i) {
        if (p.thread_names[i] == p.comm) continue;  // the main thread carries the process name
        names += (shown++ ? "," : "") + p.thread_names[i];
      }
      if (p.thread_names.size() > 5) names += ",...";
      o += fmt::format("  {:>7} {:>7} {} {:>6} {:>10} {:>4} {:>8}  {}{}\n", p.pid, p.ppid, p.state,
                       p.cpu_pct < 0 ? "-" : fmt::format("{:.1f}", p.cpu_pct), bytes(p.rss_bytes), p.threads,
                       p.nonvoluntary_per_s < 0 ? "-" : fmt::format("{:.0f}", p.nonvoluntary_per_s), p.comm,
                       names.empty() ? "" : " [" + names + "]");
    }
  }
  return o;
}

std::string plain_line(const Tick& t) {
  std::string o = clock_hms(t.unix_s);
  for (const auto& g : t.gpus) {
    if (g.lost) {
      o += fmt::format(" gpu{} LOST", g.index);
      continue;
    }
    o += fmt::format(" gpu{} {}", g.index, pct(g.util_pct));
    if (g.sm_active_pct >= 0) o += fmt::format(" sm {} tensor {}", pct(g.sm_active_pct), pct(g.tensor_active_pct));
    o += fmt::format(" mem {}/{}", bytes(g.mem_used_bytes), bytes(g.mem_total_bytes));
    if (g.temp_c >= 0) o += fmt::format(" {:.0f}C", g.temp_c);
    if (g.power_w >= 0) o += fmt::format(" {:.0f}W", g.power_w);
    if (g.clock_reasons > 0 && (static_cast<uint64_t>(g.clock_reasons) & kSlowdownReasons))
      o += " [" + decode_clock_reasons(static_cast<uint64_t>(g.clock_reasons) & kSlowdownReasons) + "]";
  }
  if (t.gpus.empty()) o += " no-gpu";
  o += fmt::format(" | cpu {}", pct(t.host.cpu_busy_pct));
  if (!t.processes.empty()) {
    double cpu = 0, rss = 0;
    for (const auto& p : t.processes) {
      if (p.cpu_pct > 0) cpu += p.cpu_pct;
      if (p.rss_bytes > 0) rss += p.rss_bytes;
    }
    o += fmt::format(" | tree {} procs {:.0f}% cpu {} rss", t.processes.size(), cpu, human_bytes(rss));
  }
  return o;
}

}  // namespace ts::sample
