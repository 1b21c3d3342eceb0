#pragma once
// Experiments are stored as runs in the recording store (kind "lab", "loader", "max-batch"), their
// JSON result as the run's report, so `trainscope runs` lists them and `trainscope report ID` shows them.
#include <cstdint>
#include <string>

namespace ts::experiment {

// Returns the new run's id, or -1 when this build has no store or it could not be written (then a
// one-line warning goes to stderr: a result that printed fine is not lost for want of a database).
int64_t store_experiment(const std::string& kind, const std::string& command, const std::string& json,
                         double started_unix, double finished_unix);
double unix_now();

}  // namespace ts::experiment
