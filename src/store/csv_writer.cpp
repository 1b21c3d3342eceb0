#include "store/csv_writer.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fmt/format.h>

#include "util/error.h"

namespace ts::store {

namespace {
// A number, or empty when not available.
std::string num(double v, int prec = 2) {
  if (v < 0 || !std::isfinite(v)) return "";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}f}", v, prec);
}
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

const std::vector<std::string>& CsvWriter::columns() {
  static const std::vector<std::string> c = {
      "timestamp", "gpu_idx", "util_pct", "mem_used_mib", "mem_total_mib", "temp_c", "power_w",
      "mem_util_pct", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_bw_pct",
      "sm_clock_mhz", "mem_clock_mhz", "clock_reasons", "pcie_gen", "pcie_width",
      "pcie_tx_mib_s", "pcie_rx_mib_s", "energy_j", "gpu_lost", "host_cpu_pct", "host_mem_available_mib",
      "cpu_pressure_avg10", "tree_processes", "tree_cpu_pct", "tree_rss_mib", "tree_threads",
      "shm_used_mib", "tree_sys_pct", "tree_minflt_per_s"};
  return c;
}

std::string CsvWriter::iso8601(double unix_s) {
  time_t secs = static_cast<time_t>(std::floor(unix_s));
  int ms = static_cast<int>(std::lround((unix_s - static_cast<double>(secs)) * 1000.0));
  if (ms == 1000) ++secs, ms = 0;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

CsvWriter::CsvWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw UserError(fmt::format("{}: cannot write CSV: {}", path, std::strerror(errno)));
  std::string header;
  for (const auto& c : columns()) header += (header.empty() ? "" : ",") + c;
  std::fprintf(f_, "%s\n", header.c_str());
  std::fflush(f_);
}

CsvWriter::~CsvWriter() {
  if (f_) std::fclose(f_);
}

void CsvWriter::flush() {
  if (f_) std::fflush(f_);
}

void CsvWriter::write(const sample::Tick& t) {
  const auto& h = t.host;
  double tree_cpu = -1, tree_rss = -1, tree_sys = -1, tree_minflt = -1;
  int threads = 0;
  for (const auto& p : t.processes) {
    if (p.cpu_pct >= 0) tree_cpu = (tree_cpu < 0 ? 0 : tree_cpu) + p.cpu_pct;
    if (p.sys_pct >= 0) tree_sys = (tree_sys < 0 ? 0 : tree_sys) + p.sys_pct;
    if (p.minflt_per_s >= 0) tree_minflt = (tree_minflt < 0 ? 0 : tree_minflt) + p.minflt_per_s;
    if (p.rss_bytes >= 0) tree_rss = (tree_rss < 0 ? 0 : tree_rss) + p.rss_bytes;
    threads += p.threads;
  }
  const bool tree = !t.processes.empty();
  std::string host = fmt::format(
      "{},{},{},{},{},{},{},{},{},{}", num(h.cpu_busy_pct, 1),
      num(h.mem_available_bytes >= 0 ? h.mem_available_bytes / kMiB : -1, 0),
      num(h.cpu_pressure.avg10), tree ? std::to_string(t.processes.size()) : "", num(tree_cpu, 1),
      num(tree_rss >= 0 ? tree_rss / kMiB : -1, 1), tree ? std::to_string(threads) : "",
      num(h.shm_used_bytes >= 0 ? h.shm_used_bytes / kMiB : -1, 1), num(tree_sys, 1), num(tree_minflt, 0));
  const std::string ts = iso8601(t.unix_s);
  if (t.gpus.empty()) {
    std::fprintf(f_, "%s,%s,%s\n", ts.c_str(), std::string(19, ',').c_str(), host.c_str());
  }
  for (const auto& g : t.gpus) {
    std::string row = fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", ts, g.index,
        num(g.util_pct), num(g.mem_used_bytes >= 0 ? g.mem_used_bytes / kMiB : -1, 0),
        num(g.mem_total_bytes >= 0 ? g.mem_total_bytes / kMiB : -1, 0), num(g.temp_c),
        num(g.power_w), num(g.mem_util_pct), num(g.sm_active_pct), num(g.sm_occupancy_pct),
        num(g.tensor_active_pct), num(g.dram_bw_pct), num(g.sm_clock_mhz), num(g.mem_clock_mhz),
        g.clock_reasons >= 0 ? fmt::format("0x{:x}", g.clock_reasons) : "",
        g.pcie_gen >= 0 ? std::to_string(g.pcie_gen) : "",
        g.pcie_width >= 0 ? std::to_string(g.pcie_width) : "",
        num(g.pcie_tx_bytes_per_s >= 0 ? g.pcie_tx_bytes_per_s / kMiB : -1),
        num(g.pcie_rx_bytes_per_s >= 0 ? g.pcie_rx_bytes_per_s / kMiB : -1), num(g.energy_j, 3),
        g.lost ? 1 : 0);
    std::fprintf(f_, "%s,%s\n", row.c_str(), host.c_str());
  }
  // Flush about once a second: a crash then loses at most the last second, as in SQLite.
  if (t.t_s - last_flush_ >= 1.0 || t.t_s < last_flush_) {
    std::fflush(f_);
    last_flush_ = t.t_s;
  }
}

}  // namespace ts::store
