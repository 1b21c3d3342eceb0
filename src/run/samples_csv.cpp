#include "run/samples_csv.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "util/error.h"

namespace ts::run {
namespace {
std::string num(double v) { return v < 0 ? std::string() : fmt::format("{:.6g}", v); }
}  // namespace

SamplesCsv::SamplesCsv(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw UserError(path + ": cannot write: " + std::strerror(errno));
}

SamplesCsv::~SamplesCsv() { close(); }

void SamplesCsv::close() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
}

void SamplesCsv::write(const sample::Tick& t) {
  if (!f_) return;
  if (gpus_ < 0) {
    gpus_ = static_cast<int>(t.gpus.size());
    std::string h = "t_s,unix_s,host_cpu_pct,tree_cpu_pct,tree_rss_bytes,tree_processes";
    for (int i = 0; i < gpus_; ++i)
      h += fmt::format(",gpu{0}_util_pct,gpu{0}_mem_used_bytes,gpu{0}_power_w,gpu{0}_temp_c,gpu{0}_sm_active_pct", i);
    std::fputs((h + "\n").c_str(), f_);
  }
  double cpu = -1, rss = -1;
  for (const auto& p : t.processes) {
    if (p.cpu_pct >= 0) cpu = (cpu < 0 ? 0 : cpu) + p.cpu_pct;
    if (p.rss_bytes >= 0) rss = (rss < 0 ? 0 : rss) + p.rss_bytes;
  }
  std::string row = fmt::format("{:.3f},{:.3f},{},{},{},{}", t.t_s, t.unix_s, num(t.host.cpu_busy_pct),
                                t.processes_fresh ? num(cpu) : std::string(),
                                t.processes_fresh ? num(rss) : std::string(),
                                t.processes_fresh ? std::to_string(t.processes.size()) : std::string());
  for (int i = 0; i < gpus_; ++i) {
    if (static_cast<size_t>(i) < t.gpus.size()) {
      const auto& g = t.gpus[static_cast<size_t>(i)];
      row += fmt::format(",{},{},{},{},{}", num(g.util_pct), num(g.mem_used_bytes), num(g.power_w), num(g.temp_c),
                         num(g.sm_active_pct));
    } else {
      row += ",,,,,";
    }
  }
  row += '\n';
  std::fputs(row.c_str(), f_);
}

}  // namespace ts::run
