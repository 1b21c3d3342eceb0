#pragma once
// Before/after: two traces, or two runs (output folders / report.json files / store ids), side by
// side. Step time change, per-class (TensorBoard breakdown) and per-kernel deltas per step, and the
// findings resolved, new and still there. Comparing two traces by hand takes a while;
// here it is one command.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts::experiment {

struct CompareFinding {
  std::string id, title, severity;
  double recoverable_fraction = 0;
};

struct CompareKernel {
  double count_per_step = 0, ms_per_step = 0;
};

// One side, reduced to what can be compared (per step, so runs of different lengths compare).
struct CompareSide {
  std::string label;  // what the user named
  std::string kind;   // trace | run
  std::string device_name;
  int64_t steps = 0;
  double step_ms = -1;       // median
  bool has_breakdown = false;
  double class_ms[8] = {};   // per step, in analysis::kBreakdownClasses order
  double class_pct[8] = {};  // of step time
  double gpu_idle_pct = -1, data_wait_pct = -1;
  double gpu_ms = -1;  // the agent's GPU time per step (CUDA events), -1 unknown
  std::map<std::string, CompareKernel> kernels;
  std::vector<CompareFinding> findings;
  // A run's time account (run.time_account: total_s, before_first_step_s, ..., goodput_pct),
  // in report.json's order; empty for a trace or a report without one.
  std::vector<std::pair<std::string, double>> account;
};

struct CompareClassRow {
  std::string name;
  double a_ms = 0, b_ms = 0, a_pct = 0, b_pct = 0;
};
struct CompareKernelRow {
  std::string name;
  CompareKernel a, b;  // zero where the kernel is absent on that side
};

struct CompareResult {
  CompareSide a, b;
  double step_change_pct = 0;  // (b - a) / a
  double speedup = 0;          // a / b
  std::vector<CompareClassRow> classes;
  std::vector<CompareKernelRow> kernels;  // largest |delta ms per step| first
  std::vector<CompareFinding> resolved, added, kept;
};

// Loads one side: a trace (.json / .json.gz), a run's output folder or report.json, or a store id.
CompareSide load_side(const std::string& what, bool progress);
CompareSide side_from_trace(const std::string& path, bool progress);
CompareSide side_from_report_json(const std::string& path);

CompareResult compare_sides(CompareSide a, CompareSide b, int top_kernels = 15);

std::string compare_text(const CompareResult& r);
// `gate`: the regression gate's verdict as JSON (regression_gate.h), added as "gate" when given.
std::string compare_json(const CompareResult& r, const std::string& gate = "");

}  // namespace ts::experiment
