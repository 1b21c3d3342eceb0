#pragma once
// The sampler's summary as the findings engine's SamplesEvidence (the run layer owns the
// mapping: sample does not know diagnose). Used at the end of a run and, while it runs, for
// the live top finding.
#include "diagnose/evidence.h"
#include "sample/sampler.h"

namespace ts::run {

diagnose::SamplesEvidence samples_evidence(const sample::Summary& s);

}  // namespace ts::run
