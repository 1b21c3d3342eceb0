#pragma once
// The run store as `trainscope run`, `runs` and `report` use it: each run is recorded with its
// command, times, exit status and output directory; its report is kept so `report RUN` can
// show it again even when the output directory is gone.
#include <cstdint>
#include <string>

#include "run/run_session.h"

namespace ts::run {

// Records a finished run; returns its id (-1 when this build has no store).
int64_t store_run(const RunResult& r, const RunOptions& opt);
// `trainscope runs`: newest first.
std::string list_runs_text(const std::string& store_path, int limit, bool json);
// `trainscope report RUN`: RUN is an id, "last", or a run's output directory.
std::string show_run_text(const std::string& store_path, const std::string& run, bool json, bool color);

}  // namespace ts::run
