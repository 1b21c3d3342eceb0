// gpu-busy: GPUs already used by other processes: a benchmark or training run sharing a GPU
// with someone else's job measures both. Processes of the inspected job (--pid) are ours.
#include <fmt/format.h>

#include <set>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"
#include "util/format.h"

namespace ts::doctor {

Check check_gpu_busy(const DoctorFacts& f) {
  Check c = make_check("gpu-busy", "GPUs free of other processes");
  if (!f.nvidia.driver_found || f.nvidia.gpus.empty()) {
    c.status = Status::skip;
    c.summary = "no NVIDIA GPU";
    return c;
  }
  std::set<int> ours;
  if (f.process.pid > 0) ours.insert(f.process.pid);
  for (const auto& t : f.process.tree) ours.insert(t.pid);
  std::vector<std::string> busy;
  for (const auto& g : f.nvidia.gpus) {
    std::vector<std::string> others;
    for (const auto& p : g.processes) {
      if (ours.count(p.pid)) continue;
      others.push_back(fmt::format("pid {} {} ({})", p.pid, p.name.empty() ? "(not visible here)" : p.name,
                                   human_bytes(static_cast<double>(p.used_bytes))));
    }
    std::string line = fmt::format("{:.0f}% busy, {} of {} used", g.util_ratio * 100,
                                   human_bytes(static_cast<double>(g.memory_used_bytes)),
                                   human_bytes(static_cast<double>(g.memory_total_bytes)));
    for (const auto& o : others) line += "; " + o;
    c.add(fmt::format("GPU {}", g.index), line);
    if (!others.empty()) busy.push_back(fmt::format("GPU {}: {}", g.index, others.front() +
                                                    (others.size() > 1 ? fmt::format(" and {} more", others.size() - 1) : "")));
    else if (g.util_ratio > 0.10 && (!g.processes_known || g.processes.empty()) && !f.inspecting_pid)
      busy.push_back(fmt::format("GPU {}: {:.0f}% busy with no process visible (another container?)", g.index,
                                 g.util_ratio * 100));
  }
  if (!busy.empty()) {
    c.status = Status::warn;
    std::string s;
    for (const auto& b : busy) s += (s.empty() ? "" : "; ") + b;
    c.summary = "GPUs in use by other processes: " + s;
    c.fix = "Wait for them, pick free GPUs with CUDA_VISIBLE_DEVICES, or stop the stale processes (a crashed "
            "notebook kernel often still holds memory).";
    return c;
  }
  c.status = Status::pass;
  c.summary = fmt::format("no other process on the {} GPU{}", f.nvidia.gpus.size(), f.nvidia.gpus.size() == 1 ? "" : "s");
  return c;
}

}  // namespace ts::doctor
