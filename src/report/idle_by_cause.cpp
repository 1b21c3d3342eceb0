#include "report/idle_by_cause.h"

#include <algorithm>

namespace ts::report {

std::vector<IdleCauseRow> idle_cause_rows(const analysis::TraceAnalysis& t) {
  const auto& a = t.gpu.attribution;
  std::vector<IdleCauseRow> rows;
  if (!a.present || a.idle_ns <= 0) return rows;
  for (int c = 0; c < analysis::kIdleCauses; ++c) {
    if (a.by_cause_ns[c] <= 0) continue;
    IdleCauseRow r;
    r.cause = static_cast<analysis::IdleCause>(c);
    r.ns = a.by_cause_ns[c];
    r.pct_of_idle = 100.0 * r.ns / a.idle_ns;
    r.pct_of_step = t.steps.pct(r.ns);
    // Entries are largest first: the first named one of this cause holds most of its time.
    // A fold "(N other host events)" may be larger but names nothing.
    for (const auto& e : a.entries) {
      if (e.cause != r.cause || e.host_event.starts_with("(")) continue;
      r.top_event = e.host_event;
      if (!e.op.empty() && e.op != e.host_event) r.top_event += " in " + e.op;
      // A DataLoader's __next__ is both the deepest event and the innermost annotation.
      if (!e.annotation.empty() && e.annotation != e.host_event) r.top_event += " · " + e.annotation;
      break;
    }
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const IdleCauseRow& x, const IdleCauseRow& y) { return x.ns > y.ns; });
  return rows;
}

}  // namespace ts::report
