#pragma once
// The findings engine: runs every rule on the evidence, ranks what they find by the step time
// it could give back, classifies the run into scenarios (docs/FINDINGS.md) and writes the verdict line.
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"

namespace ts::diagnose {

Diagnosis diagnose(const Evidence& ev);

// Several diagnoses of one job (one per rank) as one: each finding id once, the worst instance
// kept, with a "traces_affected" evidence value; labels name each input (e.g. "rank 3").
Diagnosis merge(const std::vector<Diagnosis>& parts, const std::vector<std::string>& labels);

// Orders findings: most recoverable time first, then severity, then confidence, then id.
void rank(std::vector<Finding>& findings);

// "up to 1.6x" for a recoverable fraction of step time (1 / (1 - f)).
std::string gain_text(double recoverable_fraction);
double speedup(double recoverable_fraction);

}  // namespace ts::diagnose
