#pragma once
// The live-status hand-off to `trainscope serve` (docs/PROMETHEUS.md, "trainscope.live/1"):
// while a run runs, about once a second, one small JSON file with the training process's step
// counters, a step-time histogram and the last 10 s window, replaced atomically (write a dot-tmp
// file, rename) and removed at the end. Serve ignores it once our pid is gone or it is stale.
// Only the first process that reports steps is exported (rank files under torchrun: not yet).
#include <sys/types.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "run/agent_records.h"

namespace ts::run {

// $XDG_RUNTIME_DIR/trainscope/live when that is a directory, else /tmp/trainscope-<uid>/live.
std::string live_dir();

class LiveStatusWriter {
 public:
  LiveStatusWriter(std::string dir, pid_t child, std::string command, double started_unix);
  ~LiveStatusWriter();  // removes the file
  LiveStatusWriter(const LiveStatusWriter&) = delete;
  LiveStatusWriter& operator=(const LiveStatusWriter&) = delete;

  void on_step(const StepRecord& s);    // any thread (the channel's reader)
  void set_run_id(const std::string& id);
  void write(double now_unix);          // writes the file now; errors are ignored (best effort)
  std::string json(double now_unix) const;
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_, tmp_, command_, run_id_;
  pid_t child_;
  double started_unix_;
  mutable std::mutex mu_;
  pid_t main_pid_ = 0;
  int64_t steps_ = 0, samples_ = 0;
  double data_wait_s_ = 0, step_sum_s_ = 0;
  std::vector<int64_t> buckets_;
  struct Recent {
    double t_s, dur_s, wait_s;
    int64_t samples;
  };
  std::deque<Recent> recent_;  // steps of the last window, by their end on CLOCK_MONOTONIC
};

}  // namespace ts::run
