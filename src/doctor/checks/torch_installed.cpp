// torch-installed: can the target Python import torch (and numpy), and which versions?
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_torch_installed(const DoctorFacts& f) {
  Check c = make_check("torch-installed", "PyTorch installed");
  const auto& p = f.python;
  if (f.inspecting_pid) {
    // --pid: no probe; the version comes from torch/version.py next to the mapped libtorch.
    if (p.torch_version.empty()) {
      c.status = Status::skip;
      c.summary = "the process has no libtorch mapped (not a PyTorch job, or maps unreadable)";
      return c;
    }
    c.status = Status::pass;
    c.add("torch", p.torch_version).add("torch dir", p.torch_dir);
    c.summary = "torch " + p.torch_version + " in process " + std::to_string(f.process.pid);
    return c;
  }
  c.add("python", p.python);
  if (!p.ran) {
    c.status = Status::fail;
    c.summary = p.error.empty() ? "the Python probe did not run" : p.error;
    c.fix = "Point the doctor at the interpreter that runs your training: trainscope doctor --python /path/to/python";
    return c;
  }
  c.add("python version", p.python_version);
  c.add("numpy", p.has_numpy ? p.numpy_version : "not importable");
  if (!p.has_torch) {
    c.status = Status::fail;
    c.summary = "PyTorch is not importable in " + p.python + (p.torch_error.empty() ? "" : ": " + p.torch_error);
    c.fix = "Install PyTorch for this interpreter (pip install torch, or Debian's python3-torch), or pass "
            "--python with the interpreter your training uses.";
    return c;
  }
  c.add("torch", p.torch_version).add("torch dir", p.torch_dir);
  c.status = Status::pass;
  c.summary = fmt::format("torch {} in {} (Python {}){}", p.torch_version, p.python, p.python_version,
                          p.has_numpy ? ", numpy " + p.numpy_version : ", no numpy");
  return c;
}

}  // namespace ts::doctor
