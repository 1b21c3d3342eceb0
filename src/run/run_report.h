#pragma once
// report.json for a run: the `run` section (command, exit, options, the agent's settings,
// summary and per-step table; docs/SCHEMA.md) plus the diagnosis.
#include <string>

#include "run/run_session.h"

namespace ts::run {

// The `run` section as a JSON object.
std::string run_section_json(const RunResult& r, const RunOptions& opt);
// The whole report (docs/SCHEMA.md): the report layer's JSON with the `run` section added.
std::string report_json(const RunResult& r, const RunOptions& opt);
// The same as one self-contained HTML page (the report layer's charts), for <out>/report.html.
std::string report_html(const RunResult& r, const RunOptions& opt);
// Writes <out>/report.json and returns its text; throws UserError when it cannot.
std::string write_report_json(const RunResult& r, const RunOptions& opt);

}  // namespace ts::run
