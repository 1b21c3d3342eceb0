#pragma once
// Flattens a TraceAnalysis into the {"key": number} shape that reference_values.py --check reads,
// so the C++ results can be compared with the independent Python implementation.
#include <string>

#include "analysis/trace_analysis.h"

namespace ts::analysis::testing {

std::string reference_json(const TraceAnalysis& a);

}  // namespace ts::analysis::testing
