#include "sample/cpu_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "sample/procfs.h"

namespace ts::sample {

namespace {

double v1_quota(const std::string& dir, std::string& file) {
  std::string q, p;
  if (!procfs::read_text(dir + "/cpu.cfs_quota_us", q) || !procfs::read_text(dir + "/cpu.cfs_period_us", p))
    return -1;
  double quota = std::atof(q.c_str()), period = std::atof(p.c_str());
  if (quota <= 0 || period <= 0) return -1;
  file = dir + "/cpu.cfs_quota_us";
  return quota / period;
}

// The lowest limit along a cgroup v2 path and its ancestors.
double v2_quota(const std::string& root, std::string path, std::string& file) {
  double best = -1;
  for (;;) {
    std::string text;
    const std::string f = root + path + (path.empty() || path.back() == '/' ? "" : "/") + "cpu.max";
    if (procfs::read_text(f, text)) {
      double c = procfs::parse_cpu_max(text);
      if (c > 0 && (best < 0 || c < best)) best = c, file = f;
    }
    if (path.empty() || path == "/") break;
    size_t slash = path.rfind('/');
    path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  }
  return best;
}

}  // namespace

CpuBudget read_cpu_budget(pid_t pid, const std::string& proc_root, const std::string& cgroup_root) {
  CpuBudget b;
  b.online = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string base = proc_root + "/" + (pid > 0 ? std::to_string(pid) : std::string("self"));
  std::string text;
  if (procfs::read_text(base + "/status", text))
    b.cores_usable = procfs::count_cpu_list(procfs::parse_pid_status(text).cpus_allowed_list);
  if (b.cores_usable <= 0) b.cores_usable = b.online;

  double quota = -1;
  if (procfs::read_text(base + "/cgroup", text)) {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
      if (c1 == std::string_view::npos || c2 == std::string_view::npos) continue;
      std::string_view ctrl = line.substr(c1 + 1, c2 - c1 - 1);
      std::string path(line.substr(c2 + 1));
      double q = -1;
      std::string file;
      if (line.substr(0, c1) == "0" && ctrl.empty()) {
        q = v2_quota(cgroup_root, path, file);
      } else if (ctrl == "cpu" || ctrl == "cpu,cpuacct" || ctrl == "cpuacct,cpu") {
        // v1: the controller's mount is named after its controllers.
        for (const char* dir : {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"}) {
          q = v1_quota(cgroup_root + dir + (path == "/" ? "" : path), file);
          if (q > 0) break;
        }
      }
      if (q > 0 && (quota < 0 || q < quota)) quota = q, b.quota_file = file;
    }
  }
  b.quota_cores = quota;
  b.budget_cores = quota > 0 ? std::min<double>(quota, b.cores_usable) : b.cores_usable;
  return b;
}

int CpuBudget::whole_cores() const { return static_cast<int>(std::ceil(budget_cores - 1e-9)); }

}  // namespace ts::sample
