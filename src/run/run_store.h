#pragma once
// The run store as `runs` and `report` read it. `trainscope run` records each run through
// store::Recorder (command, times, exit status, samples) and keeps its report.json there, so
// `report RUN` can show it again even when the output directory is gone.
#include <cstdint>
#include <string>

#include "run/run_session.h"

namespace ts::run {

// `trainscope runs`: newest first.
std::string list_runs_text(const std::string& store_path, int limit, bool json);
// `trainscope report RUN`: RUN is an id, "last", or a run's output directory.
std::string show_run_text(const std::string& store_path, const std::string& run, bool json, bool color);
// `trainscope report RUN --html`: the run's report.html (from its output directory).
std::string show_run_html(const std::string& store_path, const std::string& run);

}  // namespace ts::run
