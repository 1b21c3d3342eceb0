#pragma once
// Reading another process from the outside through /proc: the libraries it mapped, the
// environment it started with, its threads and its descendants (its CPU budget:
// sample::read_cpu_budget). maps and environ need the same uid or CAP_SYS_PTRACE.
// The parse_* functions take file contents so tests can feed crafted text.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/facts.h"

namespace ts::doctor {

// NUL-separated KEY=VALUE text; keeps only `keys` (all when `keys` is empty).
std::map<std::string, std::string> parse_environ(std::string_view environ,
                                                 const std::vector<std::string>& keys = {});
// (/proc/PID/maps and /proc/cpuinfo parsing and the library classifier: sample/runtime_libraries.h.)

// Reads a whole small /proc or /sys file; false if it cannot be opened.
bool read_small_file(const std::string& path, std::string& out);

// The thread and CUDA variables a doctor cares about.
const std::vector<std::string>& interesting_env_keys();

// Fills libraries, runtimes, env, threads, thread names and descendants of `pid`.
ProcessFacts inspect_process(int pid);
// All descendants of `pid` (children first, breadth-first) from every /proc/*/stat's ppid.
std::vector<ChildProcess> process_descendants(int pid);
// CPU vendor/model, hostname, budget of `pid`, /dev/shm size.
HostFacts read_host(int pid);

}  // namespace ts::doctor
