#pragma once
// The host side of a tick, from /proc: per-core busy (every tick), memory, CPU pressure,
// CPU budget and /dev/shm (slow tier), and the process tree under a root PID (slow tier).
// Rates (CPU %, context switches/s) are deltas against the previous reading of the same
// process; a PID whose starttime changed is a new process and starts over. A process born since
// the previous tree reading counts all its CPU (its starttime against /proc/uptime), and a
// process's reading holds the CPU of its children that exited meanwhile, the part their own
// readings did not show: DataLoader workers that live a second each epoch would otherwise leave
// most of their CPU out of the tree's (and in "other processes").
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sample/cpu_budget.h"
#include "sample/readings.h"

namespace ts::sample {

class HostSampler {
 public:
  HostSampler(std::string proc_root = "/proc", std::string shm_path = "/dev/shm", pid_t root = 0);

  // /proc/stat deltas since the previous call (first call: since boot).
  void read_cpu(HostReading& h);
  // Memory, pressure, budget, /dev/shm.
  void read_slow(HostReading& h);
  // The tree under the root (empty without a root or once it has exited).
  std::vector<ProcessReading> read_tree(double t_s, bool thread_names = true);
  // One process (nullopt-like: pid 0 when gone), for tests and snapshot.
  bool read_process(pid_t pid, double t_s, bool thread_names, ProcessReading& out);

  pid_t root() const { return root_; }

 private:
  // The three counters a process's rates and its reaped children's come from: CPU ticks (user +
  // kernel), kernel ticks, minor page faults.
  struct Usage {
    uint64_t ticks = 0, sys = 0, minflt = 0;
    Usage operator+(const Usage& o) const { return {ticks + o.ticks, sys + o.sys, minflt + o.minflt}; }
    // The rise since `was`, never below zero (a counter read across a PID's reuse).
    Usage since(const Usage& was) const {
      auto rise = [](uint64_t now, uint64_t then) { return now - std::min(now, then); };
      return {rise(ticks, was.ticks), rise(sys, was.sys), rise(minflt, was.minflt)};
    }
  };
  struct Prev {
    uint64_t starttime = 0, nonvol = 0, wait_ns = 0;
    pid_t ppid = 0;
    Usage own;       // utime + stime, stime, minflt
    Usage children;  // its waited-for children's totals: cutime + cstime, cstime, cminflt
    Usage reaped;    // their rise at the latest reading: what the children that exited since then added
    double t_s = 0;
    // Thread names change rarely and cost a directory walk: re-read every 5 s.
    std::vector<std::string> thread_names;
    double names_t_s = -1;
  };
  std::string proc_root_, shm_path_;
  pid_t root_;
  double ticks_per_s_;
  long page_size_;
  std::vector<uint64_t> prev_busy_, prev_total_;  // index 0: aggregate, then core+1
  // Adds to each reaper's rates what its children that exited since the previous tree reading
  // used after their last reading (`before`: that reading's processes).
  // A process as the previous tree reading left it: its whole life's totals so far (its own and
  // its reaped children's), what its reaper's totals rise by beyond them when it exits.
  struct Seen {
    pid_t pid = 0, ppid = 0;
    uint64_t starttime = 0;
    Usage life;
  };
  void add_reaped(const std::vector<Seen>& before, double dt, std::vector<ProcessReading>& out);

  std::unordered_map<pid_t, Prev> prev_;
  double prev_tree_t_s_ = -1, prev_tree_boot_s_ = -1;  // the previous tree reading (boot: /proc/uptime)
  std::string buf_;
};

}  // namespace ts::sample
