#pragma once
// The "GPU idle by cause" table every text report prints (terminal, Markdown, HTML): one row per
// cause with idle time, from analysis::IdleAttribution (analysis/idle_attribution.cpp). Built
// once here so the three reports cannot disagree on the order, the shares or the host event named.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"

namespace ts::report {

struct IdleCauseRow {
  analysis::IdleCause cause = analysis::IdleCause::Unattributed;
  int64_t ns = 0;
  double pct_of_idle = 0;  // of the attribution's idle time
  double pct_of_step = 0;  // of the step time (StepSummary::total_ns)
  // The largest named bucket of this cause: "host_event in op · annotation" (op and annotation
  // only when present and different from the host event); "" when the cause's only buckets are
  // "(N other host events)" folds, which name nothing.
  std::string top_event;
};

// Every cause with idle time, largest first (ties in cause order); empty without attribution.
std::vector<IdleCauseRow> idle_cause_rows(const analysis::TraceAnalysis& t);

}  // namespace ts::report
