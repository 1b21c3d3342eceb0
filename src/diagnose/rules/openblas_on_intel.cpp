// openblas-on-intel: NumPy math on OpenBLAS on an Intel CPU, doing the loop's data work while
// the CPU is pegged and the GPU waits (MKL is the BLAS tuned for Intel CPUs). The seed's
// situation, and every part of it measured (a mapped library alone proves nothing: NumPy's PyPI
// wheel always bundles OpenBLAS, numpy.libs/libscipy_openblas64_*.so, whether or not NumPy does
// any of the loop's math):
//   - a GPU in use whose utilisation is measured and below compute-bound, and the loop waiting
//     for data (>= kDataWaitPct of the step): the GPU waits on the host;
//   - the host's CPU saturated (>= 85% of the usable cores);
//   - the data work computes (its CPU time >= kLoadingWaitsCpuShare of its wall time): the
//     loaders' own processes are busy, where NumPy preprocessing would run;
//   - the samples' CPU vendor GenuineIntel and an OpenBLAS library mapped in the training
//     processes (src/run/job_inspect.*; matched on the path, since Debian's OpenBLAS is
//     .../openblas-pthread/libblas.so.3).
// Never on a CPU-only run: there is no GPU to wait.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> openblas_on_intel(const Evidence& ev) {
  if (!ev.samples || ev.samples->cpu_vendor != "GenuineIntel") return std::nullopt;
  std::string lib;
  for (const auto& l : ev.samples->blas_libs)
    if (l.find("openblas") != std::string::npos) lib = l;
  if (lib.empty() || !cpu_saturated(ev) || agent_without_cuda(ev)) return std::nullopt;
  // The GPU waits on the host: measured, below compute-bound, and the loop waits for its data
  // (the gain never exceeds that wait).
  Util gpu = gpu_util(ev);
  const double wait = data_wait_pct(ev);
  if (gpu.pct < 0 || gpu.pct >= th::kComputeBoundUtilPct || wait < th::kDataWaitPct) return std::nullopt;
  // The data work computes (the loaders' CPU time against their wall time, every process).
  const double share = ev.agent ? ev.agent->loading_cpu_share : -1;
  if (share < th::kLoadingWaitsCpuShare) return std::nullopt;
  Finding f = make("openblas-on-intel", Bottleneck::HostCpu, "samples");
  add(f, "cpu_busy_pct", cpu_busy_pct_of_budget(ev), "%");
  add(f, "gpu_util_pct", gpu.pct, "%");
  add(f, "data_wait_pct", wait, "%");
  add(f, "loading_cpu_pct", 100 * share, "%");
  f.recoverable_fraction = std::min(std::max(0.0, (100 - gpu.pct) / 100 * 0.3), wait / 100);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.6;
  auto slash = lib.rfind('/');
  f.title = fmt::format("NumPy/PyTorch on OpenBLAS ({}) on an Intel CPU with the CPU saturated",
                        slash == std::string::npos ? lib : lib.substr(slash + 1));
  f.gain = "MKL runs NumPy's linear algebra markedly faster on Intel CPUs";
  f.explanation =
      "All CPU cores are busy while the GPU waits for data, the data loading computes (its CPU time is most of "
      "its wall time), and the job's BLAS is OpenBLAS on an Intel CPU. "
      "Some conda mirrors install the OpenBLAS build of NumPy by default; on Intel CPUs the MKL "
      "build is considerably faster for the matrix work in preprocessing. Mapped in the job: " + lib + ".";
  f.fix = "Install the MKL build of NumPy (the default conda channel), then check numpy.show_config().";
  f.fix_code =
      "conda uninstall numpy && conda install -c defaults numpy   # MKL build\n"
      "python -c \"import numpy; numpy.show_config()\"";
  return f;
}

}  // namespace ts::diagnose::rules
