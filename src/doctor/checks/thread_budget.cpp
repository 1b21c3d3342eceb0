// thread-budget: intra-op threads against the cores this process may really use (affinity,
// cgroup cpu.max) and against the number of GPUs. The multi-GPU trap: one PyTorch
// process per GPU, each starting one thread per core, and the cores spend their time
// switching threads. torchrun sets OMP_NUM_THREADS=1 only when it is unset and nproc > 1;
// a container sees every host core in /proc/cpuinfo but gets only its cpu.max share.
// With --pid the job's threads are measured live (oversubscription.h) instead.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_thread_budget(const DoctorFacts& f) {
  Check c = make_check("thread-budget", "Threads vs CPU budget");
  const auto& b = f.host.budget;
  const int budget = b.whole_cores();
  c.add("online CPUs", std::to_string(b.online));
  c.add("affinity", std::to_string(b.cores_usable));
  c.add("cgroup cpu.max", b.quota_cores > 0 ? fmt::format("{:.2f} CPUs ({})", b.quota_cores, b.quota_file) : "no limit");
  c.add("usable cores", std::to_string(budget));
  auto omp = f.process.env.find("OMP_NUM_THREADS");
  c.add("OMP_NUM_THREADS", omp == f.process.env.end() ? "unset" : omp->second);
  int gpus = static_cast<int>(f.nvidia.gpus.size());
  gpus = std::max(gpus, f.python.cuda_device_count);
  c.add("GPUs", std::to_string(std::max(gpus, 0)));

  if (f.oversubscription) {
    const auto& o = *f.oversubscription;
    c.add("processes measured", std::to_string(o.processes));
    c.add("threads", std::to_string(o.threads_total));
    c.add("threads wanting a core (mean)", fmt::format("{:.1f}", o.runnable_threads));
    c.add("cores used", fmt::format("{:.2f}", o.cpu_cores_used));
    if (o.runqueue_wait_cores >= 0) c.add("run-queue wait", fmt::format("{:.2f} core-seconds/s", o.runqueue_wait_cores));
    for (const auto& p : o.per_process)
      c.add(fmt::format("pid {} {}", p.pid, p.comm),
            fmt::format("{} threads, {:.1f} runnable, {:.2f} cores, {:.0f} involuntary switches/s, OMP_NUM_THREADS={}",
                        p.threads, p.runnable_threads, p.cpu_cores, p.nonvoluntary_per_s,
                        p.omp_num_threads.empty() ? "unset" : p.omp_num_threads));
    if (o.oversubscribed) {
      int per = std::max(1, budget / std::max(1, o.processes));
      c.status = Status::warn;
      c.summary = "the job's threads queue for cores: " + o.summary;
      c.fix = fmt::format("Give each of the {} processes {} thread{}: OMP_NUM_THREADS={} (or torch.set_num_threads({})) "
                          "in every process, and fewer DataLoader workers if they are the busy ones.",
                          o.processes, per, per == 1 ? "" : "s", per, per);
      return c;
    }
    c.status = Status::pass;
    c.summary = o.summary;
    return c;
  }

  const int threads = f.python.num_threads;
  if (threads <= 0 || budget <= 0) {
    c.status = Status::skip;
    c.summary = "torch.get_num_threads() unknown (no PyTorch probe)";
    return c;
  }
  c.add("torch.get_num_threads()", std::to_string(threads));
  if (threads > budget) {
    c.status = Status::warn;
    c.summary = fmt::format("torch starts {} intra-op threads but only {} core{} usable{}", threads, budget,
                            budget == 1 ? " is" : "s are",
                            b.quota_cores > 0 ? " (cgroup quota: the container sees more cores than it gets)" : "");
    c.fix = fmt::format("export OMP_NUM_THREADS={} (or torch.set_num_threads({})) before training.", budget, budget);
    return c;
  }
  if (gpus >= 2 && threads * gpus > budget) {
    int per = std::max(1, budget / gpus);
    c.status = Status::warn;
    c.summary = fmt::format("one process per GPU would run {} x {} = {} threads on {} cores (each process "
                            "starts one intra-op thread per core: torch.get_num_threads(), PyTorch's CPU threading notes)", gpus, threads, gpus * threads, budget);
    c.fix = fmt::format("Per process: OMP_NUM_THREADS={} or torch.set_num_threads({}). torchrun sets "
                        "OMP_NUM_THREADS=1 only when it is unset; separate experiments per GPU get no such default.",
                        per, per);
    return c;
  }
  c.status = Status::pass;
  c.summary = fmt::format("{} intra-op thread{} on {} usable core{}", threads, threads == 1 ? "" : "s", budget,
                          budget == 1 ? "" : "s");
  return c;
}

}  // namespace ts::doctor
