#pragma once
// The current top finding while a run runs, for `trainscope serve`'s
// trainscope_training_top_finding_info: the rules on what is known so far (the agent's step
// records and settings, the per-rank table, the hardware samples). The profiler trace is read
// only at the end, so trace-only findings (launch-bound, pageable copies...) show in the final
// report, not live.
#include <optional>

#include "diagnose/finding.h"
#include "run/agent_records.h"
#include "run/live_status.h"
#include "sample/sampler.h"

namespace ts::run {

// nullopt until the agent has steps past warm-up, or when no rule fires.
std::optional<diagnose::Finding> live_top_finding(const Records& records, const sample::Sampler* sampler);
LiveFinding to_live(const diagnose::Finding& f);

}  // namespace ts::run
