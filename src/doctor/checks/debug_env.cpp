// debug-env: debugging switches of CUDA, PyTorch and NCCL left set in the environment training
// runs in (the list and its sources: sample/debug_switches.*), each slowing every step. Read from
// the probe's environment (the one the user trains in) or, with --pid, the job's.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"
#include "sample/debug_switches.h"

namespace ts::doctor {

Check check_debug_env(const DoctorFacts& f) {
  Check c = make_check("debug-env", "Debugging switches in the environment");
  if (!f.process.readable) {
    c.status = Status::skip;
    c.summary = "the process's environment could not be read" +
                (f.process.read_error.empty() ? std::string() : ": " + f.process.read_error);
    return c;
  }
  std::string set, fixes;
  for (const auto& s : sample::debug_switches_on(f.process.env)) {
    c.add(s.key, s.value);
    set += fmt::format("{}{}={} ({})", set.empty() ? "" : "; ", s.key, s.value, s.effect);
    fixes += fmt::format("{}{}", fixes.empty() ? "" : "; ", s.fix);
  }
  if (set.empty()) {
    c.status = Status::pass;
    c.summary = "none set (" + sample::debug_switches_watched() + ")";
    return c;
  }
  c.status = Status::warn;
  c.summary = "debugging switches slow every step: " + set;
  c.fix = fixes + " before training; they are for debugging (PyTorch's \"CUDA semantics\" and torch.distributed docs).";
  return c;
}

}  // namespace ts::doctor
