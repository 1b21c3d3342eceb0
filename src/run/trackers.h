#pragma once
// `trainscope run --mlflow / --wandb`: the finished run's summary metrics and findings into the
// experiment trackers, by agent/trainscope_export/trackers.py run with the training's own Python
// (where the user's mlflow / wandb live; both are optional imports there) once report.json is
// written. Its one line per tracker goes to our stderr; the run's exit status is never changed.
#include <string>
#include <vector>

namespace ts::run {

struct TrackerExport {
  bool mlflow = false, wandb = false;
  bool any() const { return mlflow || wandb; }
};

// Runs the exporter and waits for it; returns what went wrong (empty when all went in), each as a
// line for the run's warnings. `python` "" (the agent never reported its interpreter): nothing runs.
std::vector<std::string> export_to_trackers(const TrackerExport& t, const std::string& python,
                                            const std::string& agent_dir, const std::string& report_path);

}  // namespace ts::run
