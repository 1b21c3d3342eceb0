#pragma once
// Debugging switches of CUDA, PyTorch and NCCL that slow every step when left set in the
// environment a job trains in: doctor's `debug-env` check and `trainscope run`'s warning read
// the same list. Each is documented as a debugging aid by its owner (debug_switches.cpp).
#include <map>
#include <string>
#include <vector>

namespace ts::sample {

enum class SwitchScope { Cuda, Distributed, Compile, Nccl };  // where it slows a job down

struct DebugSwitch {
  std::string key, value;  // as set
  std::string effect;      // what it slows, in words
  std::string fix;         // "unset KEY" (or the value that turns it off)
  SwitchScope scope = SwitchScope::Cuda;
};

// The variables the list looks at (to read from /proc/PID/environ).
const std::vector<std::string>& debug_switch_keys();
// The list as "KEY=VALUE, ..." with the value that turns each on (what a clean environment lacks).
std::string debug_switches_watched();
// The switches set to a value that turns them on, in the list's order.
std::vector<DebugSwitch> debug_switches_on(const std::map<std::string, std::string>& env);
// The same, from this process's own environment (what a child it starts inherits).
std::vector<DebugSwitch> debug_switches_in_environ();

}  // namespace ts::sample
