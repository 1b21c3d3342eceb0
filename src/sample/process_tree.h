#pragma once
// The processes under a root PID (the training process, its DataLoader workers, torchrun
// ranks). Uses /proc/PID/task/TID/children where the kernel has it; otherwise scans every
// /proc/PID/stat for parent links.
#include <sys/types.h>

#include <string>
#include <vector>

namespace ts::sample {

// Root first, then descendants breadth-first. Empty when the root is gone.
std::vector<pid_t> process_tree(pid_t root, const std::string& proc_root = "/proc");

// Same, by scanning every process's parent (the fallback, public for tests).
std::vector<pid_t> process_tree_by_scan(pid_t root, const std::string& proc_root = "/proc");

}  // namespace ts::sample
