#pragma once
// The live status of one training process (schema "trainscope.live/1", docs/PROMETHEUS.md):
// what `trainscope run` writes about once a second, one small JSON file per process or rank,
// and `trainscope serve` reads at each scrape. Writer (src/run/live_status.cpp) and reader
// (src/serve/live_status.cpp) share this one definition, so the two cannot drift apart.
// It lives in sample because both run and serve may use sample (docs/ARCHITECTURE.md).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ts::sample {

inline constexpr const char* kLiveSchema = "trainscope.live/1";

// $XDG_RUNTIME_DIR/trainscope/live when XDG_RUNTIME_DIR is set and is a directory, else
// /tmp/trainscope-<uid>/live.
std::string live_dir();

// Absent values are -1 (numbers) or "" (strings) and are left out of the JSON.
struct LiveStatus {
  std::string file;              // reader only: the file it came from
  int pid = -1;                  // the writer (trainscope run); liveness is checked on it
  int child_pid = -1;            // the training process
  std::string run_id, command;
  // A multi-node job (`trainscope run --job-dir`): the job's identity (node_manifest.h's key, e.g.
  // "slurm:991") and this node's folder name, so a fleet's series group by job and node.
  std::string job, node;
  int rank = -1, local_rank = -1, world_size = -1;
  double started_unix = 0, updated_unix = 0;  // seconds since the epoch (written whole)
  double stale_after_s = 30;     // "stale_after_s" in the file, default 30
  int64_t steps_total = -1, samples_total = -1;
  double data_wait_seconds_total = -1;
  // Cumulative step-time histogram: (upper bound in seconds, steps <= bound), the last bound
  // +Inf; the sum of the step times in seconds and their count.
  std::vector<std::pair<double, double>> step_buckets;
  double step_seconds_sum = -1;
  int64_t step_count = -1;
  // Over the writer's recent window (the last window_seconds of steps).
  double window_seconds = -1;
  int64_t window_steps = -1;
  double step_time_mean_s = -1, data_wait_ratio = -1, samples_per_second = -1;
  bool has_finding = false;
  std::string finding_id, finding_severity, finding_title;
  double finding_gain_ratio = -1;  // share of the step the finding could give back, 0-1
};

// The file's text (compact JSON).
std::string live_status_json(const LiveStatus& s);

// Parses one file's text; false (and `error`) when it is not a trainscope.live/1 object.
bool parse_live_status(const std::string& text, LiveStatus& out, std::string& error);

}  // namespace ts::sample
