#pragma once
// The live-status hand-off to `trainscope serve` (schema: sample/live_status.h, docs/PROMETHEUS.md):
// while a run runs, about once a second, one small JSON file per training process with its step
// counters, a step-time histogram and the last 10 s window, replaced atomically (write a dot-tmp
// file, rename) and removed at the end. Serve ignores them once our pid is gone or they are stale.
// A single process writes <trainscope pid>.json; under torchrun every rank that reports steps
// writes <trainscope pid>-r<rank>.json (rank, local_rank and world_size from its agent's hello).
#include <sys/types.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "run/agent_records.h"
#include "sample/live_status.h"

namespace ts::run {

// Where the private folders of `dir` start: $XDG_RUNTIME_DIR, /tmp, or else dir's parent.
std::string live_dir_trusted_base(const std::string& dir);

// The job's current top finding, as serve's info metric shows it.
struct LiveFinding {
  std::string id, severity, title;
  double gain_ratio = -1;  // share of the step it could give back (0-1), -1 unknown
};

class LiveStatusWriter {
 public:
  LiveStatusWriter(std::string dir, pid_t child, std::string command, double started_unix);
  ~LiveStatusWriter();  // removes the files
  LiveStatusWriter(const LiveStatusWriter&) = delete;
  LiveStatusWriter& operator=(const LiveStatusWriter&) = delete;

  void on_step(const StepRecord& s);    // any thread (the channel's reader)
  void on_text(const TextRecord& t);    // hello / runtime records name each process's rank
  void set_run_id(const std::string& id);
  void set_job(const std::string& job, const std::string& node);  // --job-dir: labels job_id and node
  void set_top_finding(std::optional<LiveFinding> f);  // any thread; nullopt: none (yet)
  void write(double now_unix);          // writes the files now; errors are ignored (best effort)
  // The single-process file's content (the first process that reported steps).
  std::string json(double now_unix) const;
  // Every file this writer would write now: (path, content).
  std::vector<std::pair<std::string, std::string>> files(double now_unix) const;
  const std::string& path() const { return path_; }
  // "" when the live directory is ours and private; else why nothing will be written there.
  const std::string& problem() const { return problem_; }

 private:
  struct Recent {
    double t_s, dur_s, wait_s;
    int64_t samples;
  };
  struct Stream {
    int64_t steps = 0, samples = 0;
    double data_wait_s = 0, step_sum_s = 0;
    std::vector<int64_t> buckets;
    std::deque<Recent> recent;  // steps of the last window, by their end on CLOCK_MONOTONIC
  };
  struct Identity {
    int rank = -1, local_rank = -1, world_size = -1;
  };
  std::string json_locked(pid_t pid, const Stream& s, const Identity* id, double now_unix) const;

  std::string dir_, path_, command_, run_id_, problem_, job_, node_;
  std::optional<LiveFinding> finding_;
  pid_t child_;
  double started_unix_;
  mutable std::mutex mu_;
  pid_t first_pid_ = 0;
  std::map<pid_t, Stream> streams_;
  std::map<pid_t, Identity> ranks_;     // processes with RANK set and WORLD_SIZE > 1
  std::set<std::string> written_;       // removed at the end
};

}  // namespace ts::run
