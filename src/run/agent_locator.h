#pragma once
// Where the agent lives: $TRAINSCOPE_AGENT_DIR, else next to the installed binary
// (<prefix>/bin/trainscope -> <prefix>/share/trainscope/agent), else the source tree the
// binary was built from (running from a build directory).
#include <string>

namespace ts::run {

// The directory holding sitecustomize.py, trainscope_agent/ and trainscope_lab/ (the lab
// runners): the one locator for `run` and the experiments; throws UserError if none.
std::string locate_agent_dir();

// The source tree's agent/ the binary was built from, or null: agent_source_dir.cpp in `trainscope`
// and the tests; the release binary defines its own, which returns null (src/cli/no_source_tree.cpp).
const char* source_tree_agent_dir();

}  // namespace ts::run
