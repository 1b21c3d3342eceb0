#pragma once
// Where the agent lives: $TRAINSCOPE_AGENT_DIR, else next to the installed binary
// (<prefix>/bin/trainscope -> <prefix>/share/trainscope/agent), else the source tree the
// binary was built from (running from a build directory).
#include <string>

namespace ts::run {

// The directory holding sitecustomize.py, trainscope_agent/ and trainscope_lab/ (the lab
// runners): the one locator for `run` and the experiments; throws UserError if none.
std::string locate_agent_dir();

}  // namespace ts::run
