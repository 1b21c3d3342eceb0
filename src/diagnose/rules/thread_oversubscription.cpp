// thread-oversubscription: more busy threads than cores, so the system spends its time switching
// between them (one intra-op thread per core in every process, PyTorch's CPU threading notes;
// a high nonvoluntary context-switch rate signals oversubscription; torchrun sets
// OMP_NUM_THREADS=1 only when unset). Evidence, best first:
//  1. measured live (`trainscope run`, sample/oversubscription.h): the mean number of the
//     training processes' threads in state R over ~1 s > 1.25x the core budget (and > budget +
//     0.5). When this measure exists (>= th::kOversubLiveMinSamples samples) it decides alone.
//  2. the samples' thread count > 2x the usable cores with >= 100 involuntary switches per core
//     per second;
//  3. the agent's intra-op threads times the processes on this host above 2x the cores.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {
namespace {

std::string fix_text(int per_proc) {
  return fmt::format("Give each process its share of the cores: torch.set_num_threads({}) and OMP_NUM_THREADS={}.",
                     per_proc, per_proc);
}

std::string fix_code(int per_proc) {
  return fmt::format(
      "import torch\n"
      "torch.set_num_threads({})   # cores / processes on this host\n"
      "# shell: export OMP_NUM_THREADS={} MKL_NUM_THREADS={}",
      per_proc, per_proc, per_proc);
}

const char* kExplanation =
    "Each PyTorch process starts about one intra-op thread per core (and OpenMP/BLAS their own "
    "pools). Several processes on one host, or DataLoader workers each running multithreaded "
    "ops, then run many more threads than there are cores and the scheduler switches between them "
    "constantly: CPU and GPU utilisation both drop.";

// The user's line: the model's call in the loop each process runs; the threads are set before it.
void point_at_thread_fix(Finding& f, const Evidence& ev, int per_proc) {
  point_at_fix(f, ev, "forward",
               fmt::format("the loop each training process runs: torch.set_num_threads({}) before it", per_proc));
}

std::optional<Finding> measured_live(const Evidence& ev, const SamplesEvidence& s) {
  if (!s.threads_oversubscribed) return std::nullopt;
  const int procs = training_processes_here(ev);
  int budget = std::max(1, s.thread_budget_cores);
  // The training processes' children (DataLoader workers) were measured with them. PyTorch gives
  // each worker one intra-op thread, but NumPy's BLAS, OpenCV and the like start their own pool,
  // one thread per core, in every worker.
  int children = 0;
  double child_runnable = 0, child_parallel = 0;
  for (const auto& l : s.thread_loads)
    if (l.worker_of >= 0) ++children, child_runnable += l.runnable, child_parallel += l.parallel_share;
  // The live measure's own test (sample/oversubscription.h), applied to a part of the job.
  auto over = [](double runnable, double cores) {
    return runnable > th::kOversubRatio * cores && runnable > cores + th::kOversubMargin;
  };
  // The children run pools of their own: their threads ran side by side, which a worker of one
  // thread never does (a count of runnable threads per worker is what load shifts: a pool's
  // threads sleep between the library's calls, and more so while the host is busy).
  const bool pooled_children = children > 0 && child_parallel / children >= th::kPoolParallelShare;
  const bool trainers_over = over(s.runnable_threads_mean - child_runnable, budget);
  // Workers of one thread each beside a loop that fits the cores: the excess is how many workers
  // compute at once, which the loader rules size (dataloader-starvation, cpu-bound-transforms); a
  // thread setting would change nothing.
  if (children > 0 && !pooled_children && !trainers_over) return std::nullopt;
  Finding f = make("thread-oversubscription", Bottleneck::HostCpu, "samples (live /proc)");
  add(f, "runnable_threads_mean", s.runnable_threads_mean, "count");
  add(f, "cpu_budget_cores", budget, "count");
  add(f, "oversubscription_ratio", s.runnable_threads_mean / budget, "x");
  add(f, "processes", procs, "count");
  if (children > 0) {
    add(f, "child_processes", children, "count");
    add(f, "child_runnable_threads", child_runnable, "count");
    add(f, "child_parallel_share", child_parallel / children, "share");
  }
  add(f, "window_s", s.threads_window_s, "s");
  int threads_total = 0, intra = ev.agent ? ev.agent->torch_threads : 0;
  std::string omp, per;
  for (const auto& l : s.thread_loads) {
    threads_total += l.threads;
    std::string who = l.rank >= 0       ? fmt::format("rank {}", l.rank)
                      : l.worker_of >= 0 ? fmt::format("pid {} (child of {})", l.pid, l.worker_of)
                                         : fmt::format("pid {}", l.pid);
    per += fmt::format("{}{}: {} threads, {:.1f} runnable", per.empty() ? "" : "; ", who, l.threads, l.runnable);
    if (omp.empty() && l.worker_of < 0) omp = l.omp_num_threads.empty() ? "unset" : l.omp_num_threads;
  }
  add(f, "threads_total", threads_total, "count");
  if (intra > 0) add(f, "torch_threads_per_process", intra, "count");
  int per_proc = std::max(1, budget / procs);
  // Where the time goes: an OpenMP thread that has done its share of a parallel region waits at
  // the region's barrier for its siblings, spinning on a core first (libgomp: GOMP_SPINCOUNT,
  // 300,000 spins by default, only 100 when a process has more threads than available CPUs;
  // Intel's OpenMP: KMP_BLOCKTIME, 200 ms). Oversubscribed, a sibling is often queued for a core,
  // so the spinners burn the cores it waits for, and the queue beyond the budget is lost whole.
  // With more intra-op threads than cores (libgomp barely spins) only the switching is lost: a
  // quarter of it. Checked against verify's threads=1 re-runs (docs/FINDINGS.md, "Thread
  // oversubscription's gain").
  const bool iomp = std::any_of(s.openmp_libs.begin(), s.openmp_libs.end(),
                                [](const std::string& l) { return l.find("iomp") != std::string::npos; });
  const bool spins = iomp || intra <= 0 || intra <= budget;
  double excess = (s.runnable_threads_mean - budget) / s.runnable_threads_mean;
  f.recoverable_fraction = spins ? std::clamp(excess, 0.05, 0.6) : std::clamp(excess * 0.25, 0.05, 0.3);
  // Workers whose pools oversubscribe the cores: the loop waits for batches that their spinning
  // threads delay, and one thread per worker makes that CPU time work, so the fix takes back the
  // loop's wait for data as well as the queue beyond the cores in the rest of the step
  // (docs/FINDINGS.md, "Thread oversubscription's gain": 120 steps of tests/corpus/numpy_workers).
  const double wait = pooled_children ? std::clamp(data_wait_pct(ev) / 100, 0.0, 1.0) : 0;
  if (wait > 0) {
    add(f, "data_wait_share", wait, "share");
    f.recoverable_fraction = std::clamp(wait + (1 - wait) * f.recoverable_fraction, 0.0, 0.95);
  }
  add(f, "barrier_spin", spins ? 1 : 0, "bool");
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.85;
  f.title = fmt::format("Thread oversubscription: {:.1f} threads want a core on {} core{} ({:.1f}x), {} process{}{}",
                        s.runnable_threads_mean, budget, budget == 1 ? "" : "s", s.runnable_threads_mean / budget,
                        procs, procs == 1 ? "" : "es",
                        children > 0 ? fmt::format(" and {} child process{}", children, children == 1 ? "" : "es") : "");
  // The queue beyond the cores is a floor where a step is many small parallel regions: each one
  // waits for a queued sibling until a spinner loses its core (docs/FINDINGS.md, "Thread
  // oversubscription's gain": mnist_hogwild predicted 1.9x, measured 8.9-12.6x).
  f.gain = spins ? "the cores spin at OpenMP barriers and switch between threads instead of working (the queue "
                   "beyond the cores; a step of many small operations loses more, each waiting at its barrier for "
                   "a thread queued behind the spinners)"
                 : "CPU time goes to switching between threads instead of work";
  if (wait > 0)
    f.gain += fmt::format(", and the loop waits {:.0f}% of its step for the workers' batches; one thread per worker "
                          "gives {}",
                          100 * wait, gain_text(f.recoverable_fraction));
  f.explanation = std::string(kExplanation) + fmt::format(
      " Measured live over {:.1f} s: {}. OMP_NUM_THREADS={}{}.", s.threads_window_s, per, omp,
      intra > 0 ? fmt::format(", torch.get_num_threads()={}", intra) : std::string());
  f.explanation += spins
      ? fmt::format(" {} intra-op thread{} per process on {} core{}: OpenMP threads that finish their share of a parallel "
                    "region spin at its barrier while a sibling waits for a core ({}), so the queue beyond the cores "
                    "is lost whole.",
                    intra > 0 ? std::to_string(intra) : "The default", intra == 1 ? "" : "s", budget, budget == 1 ? "" : "s",
                    iomp ? "Intel OpenMP's KMP_BLOCKTIME" : "libgomp's GOMP_SPINCOUNT")
      : fmt::format(" More intra-op threads per process ({}) than cores ({}): libgomp barely spins at its barriers then "
                    "(GOMP_SPINCOUNT), so only the switching is lost.",
                    intra, budget);
  f.fix = fix_text(per_proc);
  f.fix_code = fix_code(per_proc);
  f.fix_settings = {{"threads", std::to_string(per_proc)}};
  if (pooled_children) {
    // The children's pools: a code change in the DataLoader (no --set reaches a library's pool in
    // the workers); the training processes' own threads only where they alone are too many.
    f.explanation += fmt::format(
        " The training process{4} {0} child process{1} (DataLoader workers) have {2:.1f} threads that want a core, "
        "{3:.1f} each: PyTorch gives each worker one intra-op thread (torch.utils.data docs, \"Multi-process data "
        "loading\"), but NumPy's OpenBLAS or MKL, OpenCV and similar libraries start their own pool of one thread per "
        "core in every worker.",
        children, children == 1 ? "" : "es", child_runnable, child_runnable / children, procs == 1 ? "'s" : "es'");
    f.fix = "Give each DataLoader worker one thread for the libraries it calls: worker_init_fn=one_thread with "
            "threadpoolctl's threadpool_limits(1) (NumPy's OpenBLAS or MKL; cv2.setNumThreads(1) for OpenCV), or start "
            "the job with OPENBLAS_NUM_THREADS=1 where the training process's own math does not use OpenBLAS." +
            (trainers_over ? " And " + fix_text(per_proc) : std::string());
    f.fix_code =
        "from threadpoolctl import threadpool_limits  # pip install threadpoolctl\n"
        "def one_thread(worker_id):\n"
        "    threadpool_limits(1)  # this worker's NumPy BLAS pool: one thread\n"
        "loader = DataLoader(dataset, batch_size=BS, num_workers=W, worker_init_fn=one_thread)";
    if (!trainers_over) f.fix_settings.clear();
    point_at_fix(f, ev, "dataloader", "the loop's DataLoader: worker_init_fn=one_thread here");
    if (!trainers_over) return f;
  }
  point_at_thread_fix(f, ev, per_proc);
  return f;
}

}  // namespace

std::optional<Finding> thread_oversubscription(const Evidence& ev) {
  if (!ev.samples) return std::nullopt;
  const auto& s = *ev.samples;
  if (s.threads_measured && s.threads_samples >= th::kOversubLiveMinSamples) return measured_live(ev, s);
  if (s.cpu_cores <= 0) return std::nullopt;
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
  f.explanation = kExplanation;
  f.fix = fix_text(per_proc);
  f.fix_code = fix_code(per_proc);
  f.fix_settings = {{"threads", std::to_string(per_proc)}};
  point_at_thread_fix(f, ev, per_proc);
  return f;
}

}  // namespace ts::diagnose::rules
