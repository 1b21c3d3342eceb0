// Linked into trainscope-portable only: the release archive never looks for its agent in the build
// host's source tree. Defined here, in an object of the executable itself, the linker resolves
// source_tree_agent_dir() before it reads the run layer's archive, whose member defining it (alone,
// agent_source_dir.cpp) is then never pulled in.
#include "run/agent_locator.h"

namespace ts::run {
const char* source_tree_agent_dir() { return nullptr; }
}  // namespace ts::run
