#pragma once
// Findings about the machine a run or analysis happens on rather than the script or trace it
// looks at (a shared host's other processes, its BLAS): tests that expect one planted finding let
// these stand beside it. scripts/gpu_check/gpu_check.py's ENVIRONMENT_FINDINGS is the same list.
#include <set>
#include <string>

namespace ts::test {

inline const std::set<std::string> kEnvironmentFindings = {"thread-oversubscription", "openblas-on-intel"};

}  // namespace ts::test
