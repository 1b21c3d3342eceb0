#pragma once
// From the agent's records to diagnose::AgentEvidence: picks the training process (the one
// with the most steps; rank 0 when ranks are known), drops warm-up and profiled steps, and
// summarises the rest with medians. The per-step table is kept for report.json.
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "run/agent_records.h"

namespace ts::run {

struct AgentSummary {
  bool agent_loaded = false;   // any record at all
  bool torch_imported = false;
  // torch was imported but no process's agent saw the import (its end record says so): the steps
  // went uncounted, and "no training step" would be a false verdict.
  bool torch_unhooked = false;
  pid_t main_pid = 0;
  std::string executable;      // the main process's sys.executable (its hello or end record)
  std::string cwd;             // the main process's working directory (its hello), "" unknown
  std::vector<StepRecord> steps;  // the main process's steps of the chosen kind, GPU joined
  int64_t warmup_steps = 0;       // leading steps left out of the medians
  std::string trace_path;         // the profiler window's trace, "" if none
  int64_t trace_first = -1, trace_last = -1;
  std::string stop_reason;        // from the agent's goodbye: exit | steps
  diagnose::AgentEvidence evidence;
};

AgentSummary summarise(const Records& r);

// One process's steps as the summary counts them: its optimizer steps when it has any, else its
// DataLoader fetches; GPU times joined.
std::vector<StepRecord> steps_of(const Records& r, pid_t pid);
// The steps the medians use: after warm-up (1 step from 3, 2 from 10; `warmup` says how many)
// and outside the profiler window (unless nothing else is left).
std::vector<const StepRecord*> steady_steps(const std::vector<StepRecord>& steps, int64_t& warmup);

// Least-squares slope of y over x = 0, 1, 2, ...
double slope(const std::vector<double>& y);
// Theil-Sen slope (median of the pairwise slopes): a one-off jump (the profiler window's
// buffers, an allocator growing its pool once) does not read as growth; a steady leak does.
double robust_slope(const std::vector<double>& y);
// The same, with pairs taken only within each segment (segment[i] labels point i; points
// labelled -1 are left out): the profiler window raises the RSS once, so the steps before and
// after it are compared only among themselves.
double robust_slope(const std::vector<double>& y, const std::vector<int>& segment);
// The same against x[i] instead of i (the step numbers of a sample whose points are not evenly spaced).
double robust_slope(const std::vector<double>& x, const std::vector<double>& y, const std::vector<int>& segment);

}  // namespace ts::run
