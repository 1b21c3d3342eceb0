#pragma once
// A job that failed after its training: the process whose death failed it (the command's own,
// killed by a crash signal, or torchrun's root-cause rank) had run its script to the end (its
// agent's exit record came with no uncaught exception) and then died while the interpreter shut
// down. PyTorch 2.13's gloo process group kept alive by DDP's reference cycles aborts a rank there
// ("terminate called without an active exception"); so can any C++ library's static destructor.
#include <string>
#include <sys/types.h>
#include <vector>

#include "run/agent_records.h"

namespace ts::run {

// `child` is the command's pid and `exit_signal` the signal that ended it (0 if it exited).
bool died_at_exit(pid_t child, int exit_signal, const std::vector<std::string>& stderr_tail,
                  const std::vector<TextRecord>& texts);

}  // namespace ts::run
