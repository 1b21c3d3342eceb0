#pragma once
// The text a run ends with: what ran and how it ended, the diagnosis (verdict first), and the
// agent's step breakdown. Also saved as <out>/report.txt so `trainscope report` can show it again.
#include <string>

#include "run/run_session.h"

namespace ts::run {

std::string run_text(const RunResult& r, const RunOptions& opt, bool color);

}  // namespace ts::run
