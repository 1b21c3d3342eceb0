#pragma once
// Runs the probe script (probe_script.h) in a Python interpreter, reads its JSON, and while it
// waits reads its /proc/PID/maps and environ (so the BLAS/OpenMP seen are the ones that
// `import torch, numpy` really loaded). Bounded: the probe is killed after `timeout_s`.
#include <string>
#include <vector>

#include "doctor/facts.h"

namespace ts::doctor {

struct ProbeResult {
  PythonFacts python;
  ProcessFacts process;  // the probe process, inspected while alive
  HostFacts host;        // read with the probe's pid (its affinity and cgroup)
};

ProbeResult run_python_probe(const std::string& python, double timeout_s = 120);

// The interpreter to probe when --python is not given: Debian's /usr/bin/python3 when it can
// import torch, else the `python3` first on PATH. Returns the probe of the chosen one.
ProbeResult probe_default_python(double timeout_s = 120);

// Fills PythonFacts from the probe's JSON line; false (and python.error) if it is not JSON.
bool parse_probe_json(const std::string& line, PythonFacts& out);

}  // namespace ts::doctor
