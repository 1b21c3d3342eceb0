#pragma once
// One `trainscope run`: launch the command with the agent injected, sample the hardware while
// it runs, then turn the agent's records, the samples and the profiler window's trace into
// diagnose::Evidence, diagnose it and write everything under the output directory.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"
#include "run/agent_summary.h"
#include "run/job_inspect.h"
#include "run/launcher.h"
#include "run/overrides.h"
#include "run/trackers.h"

namespace ts::run {

struct RunOptions {
  std::vector<std::string> command;
  std::string out_dir;             // "" = trainscope-runs/<UTC time>/
  int64_t steps = 0;               // --steps N: end after N steps (0 = run to the end)
  int64_t profile_first = 10, profile_last = 14;
  bool profile = true;             // --no-profile: false
  std::chrono::milliseconds interval{100};
  bool sample = true;              // hardware sampler
  bool store = true;               // record the run in the SQLite store
  std::string store_path;          // "" = the store's default
  bool quiet = false;              // no progress on stderr
  bool live = true;                // live-status file for `trainscope serve` while it runs
  bool live_panel = false;         // the live view at the bottom of the terminal (live_panel.h): `run` turns it
                                   // on when stderr is a terminal (--live / --no-live); never in verify/experiments
  std::string live_dir;            // "" = sample::live_dir() (XDG_RUNTIME_DIR or /tmp/trainscope-<uid>)
  std::vector<Override> overrides;  // --set KEY=VALUE, applied by the agent (overrides.h)
  bool child_stdout_to_stderr = false;  // verify --json: the command's prints must not reach stdout
  std::string cwd;                 // where the command starts ("" = here): verify --patch's patched copy
  // --job-dir DIR (or TRAINSCOPE_JOB_DIR): one node of a multi-node job. The output goes to
  // DIR/<host>-node<N>/ with its node.json (run/job_node.h) instead of out_dir.
  std::string job_dir;
  int node_rank = -1;              // --node-rank N; -1: from Slurm, torchrun's options or the ranks
  TrackerExport trackers;          // --mlflow / --wandb: the summary and findings exported at the end
};

constexpr size_t kStderrTailKept = 120;  // lines kept of the job's stderr (failure_line reads them all)
constexpr size_t kStderrTailShown = 12;  // of which the text report and report.json show the last

// The last kStderrTailShown of the kept lines.
std::vector<std::string> stderr_tail_shown(const std::vector<std::string>& tail);

struct RunResult {
  std::string out_dir, report_path, samples_path, trace_path;
  std::string started_utc;         // ISO 8601
  // The command as we write and print it: secrets redacted (util/redact.h); opt.command is what ran.
  std::vector<std::string> command_shown;
  double wall_s = 0;
  double launch_mono_s = 0;        // when the command started (steady_clock seconds: the agent's clock too)
  ExitStatus exit;
  bool stopped_by_steps = false;
  AgentSummary agent;
  JobInspection job;               // the job seen through /proc once warm (libraries, live threads)
  diagnose::Evidence evidence;
  std::optional<diagnose::Diagnosis> diagnosis;
  std::vector<std::string> warnings;  // trace unreadable, store unavailable, ...
  // The job's last stderr lines (passed through as they came): enough for failure_line to reach a
  // torchrun rank's traceback above torchrun's summary; reports show the last kStderrTailShown.
  std::vector<std::string> stderr_tail;
  std::vector<std::string> rank_traces;  // torchrun: one profiler trace per rank (sorted), else empty
  int64_t run_id = -1;             // in the store, -1 when not stored
  std::vector<OverrideOutcome> overrides;  // one per --set, applied or why not
  std::string node_dir;            // --job-dir: this node's folder (== out_dir), else ""
};

RunResult run_session(const RunOptions& opt);

// Why the job ended, in one line: "" for a clean end (exit 0 or --steps); else the exit status
// or signal and, when the job printed one, its last stderr line (a Python traceback ends with
// the exception), e.g. "exit status 1: RuntimeError: out of memory".
std::string death_cause(const RunResult& r);

// The default output directory for a run started now: trainscope-runs/<YYYYmmdd-HHMMSS>[-N].
std::string default_out_dir();

}  // namespace ts::run
