// Kernels (docs/ANALYSES.md). Over the kernels (cat kernel, communication kernels included)
// that start inside the analysis window:
//   count, per_step (count / steps), total_ns (sum of durations), median_ns,
//   under_10us_pct   share of kernels by count shorter than 10 µs (AMD TraceLens' short-kernel
//                    threshold): many of them mean launch-bound work;
//   top              kernels grouped by exact name, sorted by total time (ties: by name), the
//                    first `top` rows with count, total, median and share of all kernel time;
//   triton_kernels   kernels named triton_* (torch.compile / Inductor).
// Step.kernels: kernels starting inside each step.
#include <algorithm>
#include <unordered_map>

#include "analysis/passes.h"
#include "util/stats.h"

namespace ts::analysis {

KernelStats analyse_kernels(const TraceIndex& idx, StepSummary& steps, int top) {
  const auto& s = idx.s;
  KernelStats out;
  const std::span<const uint32_t> ks = idx.windowed(idx.kernels);
  std::unordered_map<uint32_t, std::vector<int64_t>> by_name;
  std::vector<int64_t> durs;
  durs.reserve(ks.size());
  int64_t short_count = 0;
  for (uint32_t r : ks) {
    const int64_t d = s.dur_ns[r];
    durs.push_back(d);
    out.total_ns += d;
    if (d < 10'000) ++short_count;
    if (idx.flag(r, kTritonKernel)) ++out.triton_kernels;
    by_name[s.name[r]].push_back(d);
    int st = step_of(steps, s.ts_ns[r]);
    if (st >= 0) ++steps.steps[st].kernels;
  }
  out.count = static_cast<int64_t>(ks.size());
  if (!steps.steps.empty()) out.per_step = static_cast<double>(out.count) / steps.steps.size();
  out.median_ns = median_int64(durs);
  if (out.count > 0) out.under_10us_pct = 100.0 * short_count / out.count;

  std::vector<KernelRow> rows;
  rows.reserve(by_name.size());
  for (auto& [name, ds] : by_name) {
    KernelRow row;
    row.name = std::string(s.strings.view(name));
    row.count = static_cast<int64_t>(ds.size());
    for (int64_t d : ds) row.total_ns += d;
    row.median_ns = median_int64(std::move(ds));
    row.share_pct = out.total_ns > 0 ? 100.0 * row.total_ns / out.total_ns : 0;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(top);
  out.top = std::move(rows);
  return out;
}

}  // namespace ts::analysis
