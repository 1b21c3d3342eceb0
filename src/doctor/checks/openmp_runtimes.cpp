// openmp-runtimes: two OpenMP runtimes in one process (say torch's libgomp and an MKL
// NumPy's libiomp5, or two vendored libgomp copies) each keep their own thread pool:
// twice the threads fight for the cores, and libiomp5 + libgomp are known to deadlock.
#include <fmt/format.h>

#include <set>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_openmp_runtimes(const DoctorFacts& f) {
  Check c = make_check("openmp-runtimes", "OpenMP runtimes");
  if (!f.process.readable) {
    c.status = Status::skip;
    c.summary = "could not read the libraries of the process: " + f.process.read_error;
    return c;
  }
  std::set<std::string> paths;
  std::set<std::string> vendors;
  for (const auto& r : f.process.runtimes) {
    if (r.kind != "openmp") continue;
    paths.insert(r.path);
    vendors.insert(r.vendor);
    c.add("OpenMP loaded", r.vendor + ": " + r.path);
  }
  if (paths.size() >= 2) {
    c.status = Status::warn;
    c.summary = fmt::format("{} OpenMP runtimes in one process{}: each starts its own thread pool", paths.size(),
                            vendors.size() >= 2 ? " (different vendors)" : " (copies of the same one)");
    c.fix = "Install NumPy/SciPy/PyTorch from one channel (all pip or all conda-forge); set OMP_NUM_THREADS; "
            "with MKL, MKL_THREADING_LAYER=GNU makes it use libgomp.";
    return c;
  }
  c.status = Status::pass;
  c.summary = paths.empty() ? "no OpenMP runtime is mapped" : "one OpenMP runtime: " + *vendors.begin();
  return c;
}

}  // namespace ts::doctor
