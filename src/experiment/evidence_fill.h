#pragma once
// Experiment results -> the findings engine's evidence (diagnose::LabEvidence / LoaderSweepEvidence).
#include "diagnose/evidence.h"
#include "experiment/lab.h"
#include "experiment/loader_sweep.h"

namespace ts::experiment {

diagnose::LabEvidence lab_evidence(const LabResult& r);
diagnose::LoaderSweepEvidence loader_evidence(const LoaderResult& r);

}  // namespace ts::experiment
