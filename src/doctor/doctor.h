#pragma once
// `trainscope doctor`: gather the facts (probe, /proc, cgroup, NVML, kernel log) for the checks
// (checks/). The checklist's formats (text, JSON) live apart, in render.h.
#include <functional>
#include <string>
#include <vector>

#include "doctor/check.h"
#include "doctor/facts.h"

namespace ts::doctor {

struct DoctorOptions {
  std::string python;          // "" = /usr/bin/python3 if it has torch, else python3 on PATH
  int pid = 0;                 // > 0: inspect this running job instead of probing
  double probe_timeout_s = 120;
  double oversubscription_window_s = 1.0;
  std::string nvml_library;    // "" = default lookup
  std::function<void(const std::string&)> progress;  // one line per stage (stderr)
};

// Throws ts::UserError when --pid names no process or --python cannot be run at all.
DoctorFacts collect_facts(const DoctorOptions& opt);

// --pid: torch/version.py next to the mapped torch/_C extension ("" when not found).
// Returns {version, cuda, torch_dir}.
struct TorchFromMaps {
  std::string version, cuda, dir;
};
TorchFromMaps torch_from_maps(const std::vector<std::string>& libraries);
// Parses torch/version.py text: __version__ and cuda.
TorchFromMaps parse_torch_version_py(const std::string& text);

}  // namespace ts::doctor
