// openblas-on-intel: NumPy/PyTorch CPU math on OpenBLAS on an Intel CPU while the CPU is pegged
// and the GPU waits (MKL is the BLAS tuned for Intel CPUs). Evidence: the samples' CPU vendor GenuineIntel, an OpenBLAS library mapped in the job's
// training processes (the run layer reads their /proc/PID/maps once warm, src/run/job_inspect.*;
// matched on the path, since Debian's OpenBLAS is .../openblas-pthread/libblas.so.3), and the CPU
// saturated (>= 85% of the usable cores).
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> openblas_on_intel(const Evidence& ev) {
  if (!ev.samples || ev.samples->cpu_vendor != "GenuineIntel") return std::nullopt;
  std::string lib;
  for (const auto& l : ev.samples->blas_libs)
    if (l.find("openblas") != std::string::npos) lib = l;
  if (lib.empty() || !cpu_saturated(ev)) return std::nullopt;
  // A faster BLAS helps only when the CPU's math sets the step: silent when the GPU is busy
  // (>= kComputeBoundUtilPct: the host keeps up), and the gain never exceeds the step's wait for
  // the host's data when that wait is measured.
  Util gpu = gpu_util(ev);
  const double wait = data_wait_pct(ev);
  if (gpu.pct >= th::kComputeBoundUtilPct || (gpu.pct >= 0 && wait >= 0 && wait < th::kDataWaitPct)) return std::nullopt;
  Finding f = make("openblas-on-intel", Bottleneck::HostCpu, "samples");
  add(f, "cpu_busy_pct", cpu_busy_pct_of_budget(ev), "%");
  if (gpu.pct >= 0) add(f, "gpu_util_pct", gpu.pct, "%");
  f.recoverable_fraction = gpu.pct >= 0 ? std::max(0.0, (100 - gpu.pct) / 100 * 0.3) : 0.05;
  if (wait >= 0 && gpu.pct >= 0) f.recoverable_fraction = std::min(f.recoverable_fraction, wait / 100);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.6;
  auto slash = lib.rfind('/');
  f.title = fmt::format("NumPy/PyTorch on OpenBLAS ({}) on an Intel CPU with the CPU saturated",
                        slash == std::string::npos ? lib : lib.substr(slash + 1));
  f.gain = "MKL runs NumPy's linear algebra markedly faster on Intel CPUs";
  f.explanation =
      "All CPU cores are busy while the GPU waits, and the job's BLAS is OpenBLAS on an Intel CPU. "
      "Some conda mirrors install the OpenBLAS build of NumPy by default; on Intel CPUs the MKL "
      "build is considerably faster for the matrix work in preprocessing. Mapped in the job: " + lib + ".";
  f.fix = "Install the MKL build of NumPy (the default conda channel), then check numpy.show_config().";
  f.fix_code =
      "conda uninstall numpy && conda install -c defaults numpy   # MKL build\n"
      "python -c \"import numpy; numpy.show_config()\"";
  return f;
}

}  // namespace ts::diagnose::rules
