#pragma once
// Thread oversubscription across the processes of one job (torchrun ranks, experiments
// sharing a host), measured live from /proc: the multi-GPU trap, where N processes
// each start one intra-op thread per core and the cores spend their time switching.
//
// Measure: over a short window, sample every thread's state in /proc/PID/task/TID/stat;
// the mean number in state R (running or waiting for a core) is the job's CPU demand.
// Demand well above the core budget means threads queue for cores. CPU time per thread
// (utime+stime deltas), non-voluntary context switches and, where the kernel keeps them,
// run-queue wait times (/proc/PID/task/TID/schedstat) are reported as evidence.
// /proc only, so both `trainscope doctor --pid` and the run layer (on a job's ranks, live) use it.
#include <string>
#include <vector>

namespace ts::sample {

struct ProcessLoad {
  int pid = -1;
  std::string comm;
  std::string omp_num_threads;      // from /proc/PID/environ ("" = unset or unreadable)
  int threads = 0;                  // at the end of the window
  double runnable_threads = 0;      // mean count in state R
  // Share of the samples in which two or more of its threads were in state R at once: a process
  // that runs one thread (a DataLoader worker, torch.set_num_threads(1)) stays near 0 however
  // loaded the host, while a thread pool at work (NumPy's OpenBLAS) shows it whenever it computes.
  double parallel_share = 0;
  double cpu_cores = 0;             // CPU time used / window
  double nonvoluntary_per_s = 0;    // summed over threads
  double runqueue_wait_cores = -1;  // schedstat wait / window; -1 when the kernel reports none
};

struct Oversubscription {
  double window_s = 0;
  int samples = 0;
  int cpu_budget = 0;
  int processes = 0;
  int threads_total = 0;
  double runnable_threads = 0;      // mean, all processes together
  double cpu_cores_used = 0;
  double runqueue_wait_cores = -1;
  bool oversubscribed = false;      // runnable_threads > 1.25 x budget (and > budget + 0.5)
  std::vector<ProcessLoad> per_process;
  std::string summary;              // one line for reports
};

// Samples `pids` (each process's own threads; pass every rank) for `window_s` seconds, every
// `period_s`. cpu_budget <= 0: the first pid's budget (affinity, cgroup quota; sample/cpu_budget.h), rounded up.
// Processes that exit during the window keep what was measured before they went (and count 0
// runnable threads after); once all have exited the window ends there (window_s, samples say
// how much was seen), so a caller can tell a short look from a full one.
Oversubscription measure_oversubscription(const std::vector<int>& pids, double window_s = 1.0,
                                          int cpu_budget = 0, double period_s = 0.05);

}  // namespace ts::sample
