#pragma once
// The job seen from the outside while it runs: once it has warmed up (the agent reported step 3,
// or some seconds passed without), `trainscope run` reads its training processes' /proc/PID/maps
// (the BLAS and OpenMP runtimes really mapped, sample/runtime_libraries.h), the CPU vendor, and
// measures thread oversubscription live across them for one second
// (sample/oversubscription.h). It looks again when another training process warms up after the
// look (hogwild's mp.Process trainers, a spawned rank that was slow to import torch), at most
// kMaxLooks times, and keeps the look that saw the most training processes: a job's processes
// that start one after another would otherwise be measured one at a time. It works on its own
// low-priority thread, so the launcher's wait loop stays responsive and the job never waits for
// it; processes that exit mid-measure only shorten what is seen.
// Training processes: torchrun's ranks (the agent's hello records carry pid and RANK), else the
// processes with step records (most steps first), else the launched process itself. Their child
// processes (DataLoader workers) are measured with them: their threads want the same cores.
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "diagnose/evidence.h"
#include "run/agent_records.h"
#include "sample/oversubscription.h"
#include "sample/runtime_libraries.h"

namespace ts::run {

struct JobProcess {
  int pid = -1;
  int rank = -1;             // -1: not a torchrun rank
  int64_t steps = 0;         // step records seen from it when it was picked
  bool readable = false;     // its maps could be read (alive, ours)
  std::vector<sample::RuntimeLibrary> runtimes;
};

struct JobInspection {
  bool inspected = false;    // maps were read
  std::string trigger;       // "step 3" / "after 10 s without 3 steps"
  double at_s = 0;           // seconds after launch
  double cost_cpu_s = 0;     // CPU time the look itself took (the inspector thread's rusage)
  std::string cpu_vendor;    // /proc/cpuinfo vendor_id
  std::vector<JobProcess> processes;
  std::vector<std::string> blas_libs, openmp_libs;  // distinct paths over the processes
  std::optional<sample::Oversubscription> oversubscription;
  // Measured beside the training processes: their children (DataLoader workers, whose NumPy or
  // OpenCV may run a thread pool of their own), child pid -> training pid.
  std::map<int, int> worker_of;
  std::string skipped;       // why nothing was inspected ("" when inspected)
};

// The training processes among the agent's records (see above); root when nothing else.
std::vector<JobProcess> training_processes(const Records& records, pid_t root);

// The live child processes of `pid` (/proc/PID/task/TID/children of each of its threads).
std::vector<int> child_processes(int pid);

// Reads maps and vendor of `procs` now (no waiting); the oversubscription is measured separately.
void read_runtimes(JobInspection& out, std::vector<JobProcess> procs);

class JobInspector {
 public:
  struct Config {
    int64_t trigger_step = 3;      // after this step the job is warm
    double fallback_s = 10;        // inspect anyway after this long without it
    double window_s = 1.0;         // oversubscription window
    int cpu_budget = 0;            // 0: the root's (affinity, cgroup quota)
  };
  // `records` returns what the agent sent so far (AgentChannel::snapshot); called on the
  // inspector's thread once, at the trigger.
  JobInspector(pid_t root, std::function<Records()> records, Config cfg);
  JobInspector(pid_t root, std::function<Records()> records) : JobInspector(root, std::move(records), Config{}) {}
  ~JobInspector();
  JobInspector(const JobInspector&) = delete;
  JobInspector& operator=(const JobInspector&) = delete;

  static constexpr int kMaxLooks = 4;
  // From the channel's reader thread for every step record of process `pid`: cheap.
  void on_step(pid_t pid, int64_t step);
  // The job has ended: stops waiting (a measure in progress ends as its processes have gone),
  // joins the thread and returns what was found.
  JobInspection finish();

 private:
  void loop();
  void run();
  JobInspection look(const std::string& trigger, double at_s);
  bool new_warm_process() const;  // under mu_
  pid_t root_;
  std::function<Records()> records_;
  Config cfg_;
  std::atomic<int64_t> max_step_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::set<pid_t> warm_;         // processes past the trigger step (under mu_)
  std::set<pid_t> looked_at_;    // the training processes of the last look (under mu_)
  JobInspection result_;
  std::thread thread_;
};

// Copies what was found into the samples evidence (cpu_vendor, blas/openmp libs, live threads).
void fill_evidence(const JobInspection& j, diagnose::SamplesEvidence& s);
// report.json's "host" section (an object), and the report's text lines.
std::string host_section_json(const JobInspection& j, const diagnose::AgentEvidence* agent);
std::string host_text(const JobInspection& j, const diagnose::AgentEvidence* agent);

}  // namespace ts::run
