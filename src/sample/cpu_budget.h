#pragma once
// How much CPU a process may really use: its affinity mask and its cgroup's CPU quota
// (v2 cpu.max, walking up the hierarchy; v1 cpu.cfs_quota_us / cpu.cfs_period_us).
// A container that sees 64 cores in /proc/stat may have a budget of 4.
#include <sys/types.h>

#include <string>

namespace ts::sample {

// The one core-budget reading: the sampler, the run layer's job inspection and doctor all use it.
struct CpuBudget {
  int online = 0;           // sysconf(_SC_NPROCESSORS_ONLN)
  int cores_usable = 0;     // CPUs in the affinity mask
  double quota_cores = -1;  // cgroup quota in cores, -1 for none
  std::string quota_file;   // the file the quota came from ("" for none)
  double budget_cores = 0;  // min of the two
  // Whole cores the process can keep busy: the budget rounded up (a quota of 1.5 CPUs keeps
  // two threads partly busy).
  int whole_cores() const;
};

// pid 0: this process. proc_root and cgroup_root are parameters so tests can use crafted trees.
CpuBudget read_cpu_budget(pid_t pid, const std::string& proc_root = "/proc",
                          const std::string& cgroup_root = "/sys/fs/cgroup");

}  // namespace ts::sample
