#pragma once
// The run store as `runs` and `report` read it. `trainscope run` records each run through
// store::Recorder (command, times, exit status, samples) and keeps its report.json there, so
// `report RUN` can show it again even when the output directory is gone.
#include <cstdint>
#include <string>
#include <vector>

#include "run/run_session.h"

namespace ts::run {

// What the store holds: `run` (trainscope run), `lab`, `loader`, `max-batch` (their results),
// `watch` (hardware samples, no report).
const std::vector<std::string>& stored_kinds();
// `trainscope runs`: newest first, every kind or only `kind`.
// width > 0: the command and verdict columns shrink so that each row fits (a terminal).
std::string list_runs_text(const std::string& store_path, int limit, bool json, const std::string& kind = "",
                           int width = 0);
// `trainscope report RUN`: RUN is an id (of any kind), "last" (the newest `run`), or a run's
// output directory. A run shows its report; a lab/loader/max-batch result its outcome and
// findings (--json: the whole result); a watch recording what it holds.
std::string show_run_text(const std::string& store_path, const std::string& run, bool json, bool color);
// `trainscope report RUN --html`: the run's report.html (from its output directory).
std::string show_run_html(const std::string& store_path, const std::string& run);

}  // namespace ts::run
