// The source tree's agent/, compiled in (src/run/CMakeLists.txt): the locator's last fallback, for
// a binary run from its build directory. Alone in its archive member on purpose (agent_locator.h).
#include "run/agent_locator.h"

namespace ts::run {
const char* source_tree_agent_dir() { return TS_AGENT_SOURCE_DIR; }
}  // namespace ts::run
