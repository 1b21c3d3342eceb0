// cpu-blas: which BLAS NumPy and PyTorch really call, read from the probe's (or the job's)
// /proc/PID/maps, against the CPU vendor. OpenBLAS NumPy on an Intel CPU can peg
// every core while the GPU starves (MKL is the fast path there). Debian's alternatives can
// also leave NumPy on the unoptimised reference BLAS.
#include <fmt/format.h>

#include <set>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_cpu_blas(const DoctorFacts& f) {
  Check c = make_check("cpu-blas", "CPU and BLAS library");
  c.add("CPU", f.host.cpu_vendor + (f.host.cpu_model.empty() ? "" : " (" + f.host.cpu_model + ")"));
  if (!f.process.readable) {
    c.status = Status::skip;
    c.summary = "could not read the libraries of the process: " + f.process.read_error;
    return c;
  }
  std::set<std::string> vendors;
  for (const auto& r : f.process.runtimes) {
    if (r.kind != "blas") continue;
    vendors.insert(r.vendor);
    c.add("BLAS loaded", r.vendor + ": " + r.path);
  }
  const bool intel = f.host.cpu_vendor == "GenuineIntel";
  if (vendors.count("reference BLAS")) {
    c.status = Status::warn;
    c.summary = "the process calls the reference BLAS (netlib): one thread, no tuned kernels, where OpenBLAS or "
                "MKL use every core (Debian's NumPy and PyTorch both link libblas.so.3)";
    c.fix = intel ? "Install an optimised BLAS: apt install libopenblas0-pthread (Debian switches libblas.so.3 "
                    "with update-alternatives) or, better on Intel, NumPy with MKL (conda install numpy from "
                    "the defaults channel)."
                  : "Install an optimised BLAS: apt install libopenblas0-pthread (Debian switches "
                    "libblas.so.3 with update-alternatives), or pip install numpy (ships OpenBLAS).";
    return c;
  }
  if (intel && vendors.count("OpenBLAS") && !vendors.count("MKL")) {
    c.status = Status::warn;
    c.summary = "OpenBLAS on an Intel CPU: NumPy math in the data pipeline can max out every core "
                "(NumPy in DataLoader workers multiplies threads per worker); MKL is the faster path on Intel";
    c.fix = "Install NumPy built with MKL (conda install numpy from the defaults channel, not a mirror that "
            "defaults to OpenBLAS), or cap OpenBLAS threads: OPENBLAS_NUM_THREADS=1 in DataLoader workers.";
    return c;
  }
  c.status = Status::pass;
  if (vendors.empty()) {
    c.summary = "no separate BLAS library is mapped (PyTorch wheels link MKL/OpenBLAS statically)";
  } else {
    std::string list;
    for (const auto& v : vendors) list += (list.empty() ? "" : ", ") + v;
    c.summary = fmt::format("{} on a {} CPU", list, f.host.cpu_vendor.empty() ? "unknown" : f.host.cpu_vendor);
  }
  return c;
}

}  // namespace ts::doctor
