#include "run/live_finding.h"

#include "diagnose/diagnose.h"
#include "run/agent_summary.h"
#include "run/rank_summary.h"
#include "run/samples_evidence.h"

namespace ts::run {

std::optional<diagnose::Finding> live_top_finding(const Records& records, const sample::Sampler* sampler) {
  AgentSummary a = summarise(records);
  if (a.evidence.steps <= 0) return std::nullopt;
  diagnose::Evidence ev;
  ev.agent = a.evidence;
  ev.ranks = summarise_ranks(records);
  if (sampler) ev.samples = samples_evidence(sampler->summary());
  diagnose::Diagnosis d = diagnose::diagnose(ev);
  if (d.findings.empty()) return std::nullopt;
  return d.findings.front();
}

LiveFinding to_live(const diagnose::Finding& f) {
  return LiveFinding{f.id, diagnose::severity_name(f.severity), f.title, f.recoverable_fraction};
}

}  // namespace ts::run
