#pragma once
// The text a run ends with: what ran and how it ended, the diagnosis (verdict first), and the
// agent's step breakdown. Also saved as <out>/report.txt so `trainscope report` can show it again.
#include <string>

#include "report/report.h"
#include "run/run_session.h"

namespace ts::run {

// On a terminal: the style of report::detect_terminal (colour, width); every line fits the width.
std::string run_text(const RunResult& r, const RunOptions& opt, const report::TerminalStyle& style);
// Plain or coloured at 100 columns (report.txt).
inline std::string run_text(const RunResult& r, const RunOptions& opt, bool color) {
  report::TerminalStyle style;
  style.color = color;
  return run_text(r, opt, style);
}

}  // namespace ts::run
