#pragma once
// The regression gate: `compare A B --max-regression 5%` and `verify --max-regression 5%` fail a CI
// job (exit status 1) with one line saying what regressed and by how much. Pure functions of a
// CompareResult / VerifyResult, tested on crafted input and on real runs.
//
// compare, B against A:
//  - the step time (median) grew by more than the limit: (B - A) / A > limit;
//  - a finding is new in B (any severity above info: a note is not a regression);
//  - a finding in both got worse: what it charges per step (recoverable_fraction x step, in ms)
//    grew by more than the limit's share of A's step (the unit `verify` calls a finding resolved
//    in), or, where a side has no step time, its recoverable fraction grew by more than the limit.
// verify, each fix against its own prediction (a fix must hold its gain):
//  - the re-run's measured step is more than the limit slower than the predicted step
//    (baseline step / predicted speedup);
//  - the fix's finding is not resolved, or the re-run was not measured.
//   New findings in a fix's re-run do not fail it: removing one bottleneck exposes the next.
#include <optional>
#include <string>
#include <vector>

#include "experiment/compare.h"
#include "experiment/verify.h"

namespace ts::experiment {

struct Regression {
  std::string what;        // "step time", "new finding dataloader-starvation", ...
  double change_pct = 0;   // by how much, in percent (of A's step for findings)
  std::string detail;      // "50.10 -> 60.31 ms per step"
};

struct GateVerdict {
  double limit_pct = 0;
  bool pass = true;
  std::vector<Regression> regressions;
  std::string line;  // one line: what regressed and by how much, or what held
};

// "5%", "5", "2.5 %" -> 5, 2.5; nullopt unless a number in [0, 1000].
std::optional<double> parse_regression_limit(const std::string& s);

GateVerdict gate_compare(const CompareResult& r, double limit_pct);
GateVerdict gate_verify(const VerifyResult& r, double limit_pct);

// The verdict as a JSON object ("gate": {...}), for compare --json and verify --json.
std::string gate_json(const GateVerdict& g);

}  // namespace ts::experiment
