#pragma once
// The hand-off from a running `trainscope run` to `trainscope serve` on the same host: the run
// writes one small JSON file per process (or per rank) into the live directory and replaces it
// atomically (write "<name>.tmp", rename) every second or so; serve reads every *.json there at
// each scrape. Files whose writer is gone or that stopped updating are ignored, so a crashed
// run never leaves a ghost in the metrics. Schema: docs/PROMETHEUS.md ("trainscope.live/1").
#include <string>
#include <utility>
#include <vector>

namespace ts::serve {

// $XDG_RUNTIME_DIR/trainscope/live when XDG_RUNTIME_DIR is set and is a directory, else
// /tmp/trainscope-<uid>/live.
std::string default_live_dir();

struct LiveStatus {
  std::string file;
  int pid = -1;                  // the writer (trainscope run); liveness is checked on it
  int child_pid = -1;            // the training process
  std::string run_id, command;
  int rank = -1, local_rank = -1, world_size = -1;
  double started_unix = 0, updated_unix = 0;
  double stale_after_s = 30;     // "stale_after_s" in the file, default 30
  double steps_total = -1, samples_total = -1, data_wait_seconds_total = -1;
  // Cumulative step-time histogram: (upper bound in seconds, steps <= bound); sum and count.
  std::vector<std::pair<double, double>> step_buckets;
  double step_seconds_sum = -1, step_count = -1;
  // Over the writer's recent window (e.g. the last 10 s).
  double window_seconds = -1, step_time_mean_s = -1, data_wait_ratio = -1, samples_per_second = -1;
  bool has_finding = false;
  std::string finding_id, finding_severity, finding_title;
  double finding_gain_ratio = -1;
};

// Parses one file's text; false (and `error`) when it is not a trainscope.live/1 object.
bool parse_live_status(const std::string& text, LiveStatus& out, std::string& error);

// Every current status in `dir`: parsed, writer alive (kill(pid, 0)), updated within its
// stale_after_s of `now_unix`. Unreadable or malformed files are skipped (listed in `skipped`).
// A `dir` that is not private to us (a symlink, another owner, group/other access) is not read
// at all (its problem is the one entry of `skipped`); files are opened with O_NOFOLLOW.
std::vector<LiveStatus> read_live_statuses(const std::string& dir, double now_unix,
                                           std::vector<std::string>* skipped = nullptr);

}  // namespace ts::serve
