// thread-oversubscription: more busy threads than cores, so the system spends its time switching
// between them (seed 003 "The PyTorch threading issue on multi-card instances"; REFERENCE.md 4:
// a high nonvoluntary context-switch rate signals oversubscription; torchrun sets
// OMP_NUM_THREADS=1 only when unset). Evidence: the samples' thread count > 2x the usable cores
// with >= 100 involuntary switches per core per second; or the agent's intra-op threads times the
// processes on this host above 2x the cores.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> thread_oversubscription(const Evidence& ev) {
  if (!ev.samples || ev.samples->cpu_cores <= 0) return std::nullopt;
  const auto& s = *ev.samples;
  double cores = s.cpu_budget_cores > 0 ? s.cpu_budget_cores : s.cpu_cores;
  double nonvol_per_core = s.nonvoluntary_switches_per_s / cores;
  int procs = ev.agent ? std::max(1, ev.agent->world_size) : std::max(1, s.process_count);
  int torch_threads = ev.agent ? ev.agent->torch_threads : 0;
  bool by_switches = s.threads_total > th::kThreadsPerCore * cores && nonvol_per_core >= th::kNonvolPerCorePerS;
  bool by_config = torch_threads > 0 && procs > 1 && double(torch_threads) * procs > th::kThreadsPerCore * cores;
  if (!by_switches && !by_config) return std::nullopt;
  Finding f = make("thread-oversubscription", Bottleneck::HostCpu, by_switches ? "samples" : "agent+samples");
  add(f, "cpu_cores", cores, "count");
  add(f, "threads_total", s.threads_total, "count");
  add(f, "nonvoluntary_switches_per_core_s", nonvol_per_core, "1/s");
  if (torch_threads > 0) add(f, "torch_threads_per_process", torch_threads, "count");
  add(f, "processes", procs, "count");
  int per_proc = std::max(1, int(cores) / procs);
  // Contention costs are hard to size from counters; a moderate estimate.
  f.recoverable_fraction = 0.1;
  f.severity = Severity::Medium;
  f.confidence = by_switches ? 0.75 : 0.6;
  f.title = fmt::format("Thread oversubscription: {} threads on {:.0f} cores{}", s.threads_total, cores,
                        by_config ? fmt::format(" ({} processes x {} intra-op threads)", procs, torch_threads) : "");
  f.gain = "CPU time goes to switching between threads instead of work";
  f.explanation =
      "Each PyTorch process starts about one intra-op thread per core (and OpenMP/BLAS their own "
      "pools). Several processes on one host, or DataLoader workers each running multithreaded "
      "ops, then run many more threads than there are cores and the scheduler switches between them "
      "constantly: CPU and GPU utilisation both drop.";
  f.fix = fmt::format("Give each process its share of the cores: torch.set_num_threads({}) and OMP_NUM_THREADS={}.",
                      per_proc, per_proc);
  f.fix_code = fmt::format(
      "import torch\n"
      "torch.set_num_threads({})   # cores / processes on this host\n"
      "# shell: export OMP_NUM_THREADS={} MKL_NUM_THREADS={}",
      per_proc, per_proc, per_proc);
  return f;
}

}  // namespace ts::diagnose::rules
