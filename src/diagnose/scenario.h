#pragma once
// The four scenarios (small/large model x simple/complex data) plus "not on the GPU" and
// "CPU-only" (docs/FINDINGS.md, "Scenarios"):
// which one a run is, from GPU utilisation, its fluctuation, CPU load and the data wait.
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"

namespace ts::diagnose {

struct ScenarioResult {
  Scenario scenario = Scenario::Unknown;
  std::string reason;  // the numbers that decided it
};

ScenarioResult classify(const Evidence& ev, const std::vector<Finding>& findings);

}  // namespace ts::diagnose
