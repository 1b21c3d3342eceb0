// Kernel launch statistics (Holistic Trace Analysis' definitions; docs/ANALYSES.md). For each
// kernel starting inside the analysis window whose launching runtime call is known (by
// correlation id):
//   launch delay        kernel start - runtime call end, clipped at 0 (time in the GPU queue);
//   short kernel        kernel shorter than its launch call, with the call <= 50 µs
//                       (the CPU cannot launch fast enough to keep the GPU busy);
//   runtime outlier     launch call longer than 50 µs;
//   launch-delay outlier delay over 100 µs.
// `launches` counts kernels with a known launcher (one cudaGraphLaunch may count many).
#include <algorithm>

#include "analysis/passes.h"
#include "util/stats.h"

namespace ts::analysis {

LaunchStats analyse_launch(const TraceIndex& idx) {
  const auto& s = idx.s;
  LaunchStats out;
  std::vector<int64_t> delays, runtimes;
  for (uint32_t k : idx.kernels) {
    if (!idx.in_window(k)) continue;
    const uint32_t rt = idx.launcher(k);
    if (rt == kNoRow) continue;
    ++out.launches;
    const int64_t delay = std::max<int64_t>(0, s.ts_ns[k] - s.end_ns(rt));
    const int64_t rdur = s.dur_ns[rt];
    delays.push_back(delay);
    runtimes.push_back(rdur);
    if (s.dur_ns[k] < rdur && rdur <= 50'000) ++out.short_kernels;
    if (rdur > 50'000) ++out.runtime_outliers;
    if (delay > 100'000) ++out.launch_delay_outliers;
  }
  out.median_launch_delay_ns = median_int64(std::move(delays));
  out.median_runtime_ns = median_int64(std::move(runtimes));
  return out;
}

}  // namespace ts::analysis
