#pragma once
// One account of the step (docs/FINDINGS.md, "One account of the step"). Every finding's
// recoverable_fraction is the share of the step its fix removes, on one scale, and together the
// findings never claim more than the step: no more of the GPU's idle time than it idles, no more
// of its busy time than it works. Specific causes (host-sync, unfused-optimizer, in-loop-io, the
// DataLoader, ...) claim first; the generic readings of the same idle time (gpu-idle,
// launch-bound, batch-too-small) keep only what remains after them, in that order.
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"

namespace ts::diagnose {

struct StepAccount {
  double step_ms = -1;     // the step the shares are of: the agent's median, else the trace's; -1 unknown
  double idle_share = -1;  // share of the step with the GPU idle (0-1); -1 no GPU evidence
};

// What the claims are shares of, from the evidence.
StepAccount step_account(const Evidence& ev);

// Which part of the step a finding's fix removes time from.
enum class ClaimPool { Idle, Busy, Step };
ClaimPool claim_pool(const std::string& id);
// The generic findings, settled after every specific one (in this order); -1 for the others.
int generic_rank(const std::string& id);
// A cost spread through the whole step in proportion (the kernel zeroing fresh pages for every
// allocation): another fix that removes part of the step removes its share of this cost with it,
// so it claims its share of the step the specific findings leave, after them.
bool spread_through_step(const std::string& id);

// Caps every claim to what is left of its pool and of the step, specific causes first, and
// records it in claimed_ms; a generic finding's claim becomes what remains after the specific
// ones, and its gain text says so.
void settle(std::vector<Finding>& findings, const StepAccount& account);

}  // namespace ts::diagnose
