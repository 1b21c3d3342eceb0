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
#include <utility>

#include "analysis/passes.h"
#include "util/stats.h"

namespace ts::analysis {

KernelStats analyse_kernels(const TraceIndex& idx, StepSummary& steps, int top) {
  const auto& s = idx.s;
  KernelStats out;
  const std::span<const uint32_t> ks = idx.windowed(idx.kernels);
  // Grouped by name without a hash lookup and a list per name: each distinct name gets a slot
  // (by string id), then the durations are laid out name by name (a counting sort) for the
  // medians.
  std::vector<int32_t> slot_of(s.strings.size(), -1);
  std::vector<uint32_t> slot_name;
  std::vector<size_t> first;  // per slot: count, then where its durations start
  std::vector<int32_t> slot(ks.size());
  int64_t short_count = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    const uint32_t r = ks[i];
    const int64_t d = s.dur_ns[r];
    out.total_ns += d;
    if (d < 10'000) ++short_count;
    if (idx.flag(r, kTritonKernel)) ++out.triton_kernels;
    int32_t& k = slot_of[s.name[r]];
    if (k < 0) {
      k = static_cast<int32_t>(slot_name.size());
      slot_name.push_back(s.name[r]);
      first.push_back(0);
    }
    slot[i] = k;
    ++first[static_cast<size_t>(k)];
    int st = step_of(steps, s.ts_ns[r]);
    if (st >= 0) ++steps.steps[st].kernels;
  }
  out.count = static_cast<int64_t>(ks.size());
  if (!steps.steps.empty()) out.per_step = static_cast<double>(out.count) / steps.steps.size();
  if (out.count > 0) out.under_10us_pct = 100.0 * short_count / out.count;

  std::vector<int64_t> by_name(ks.size());
  size_t at = 0;
  for (size_t& f : first) at += std::exchange(f, at);
  std::vector<size_t> fill = first;
  for (size_t i = 0; i < ks.size(); ++i) by_name[fill[static_cast<size_t>(slot[i])]++] = s.dur_ns[ks[i]];

  std::vector<KernelRow> rows;
  rows.reserve(slot_name.size());
  for (size_t k = 0; k < slot_name.size(); ++k) {
    const std::span<int64_t> ds(by_name.data() + first[k], fill[k] - first[k]);
    KernelRow row;
    row.name = std::string(s.strings.view(slot_name[k]));
    row.count = static_cast<int64_t>(ds.size());
    for (int64_t d : ds) row.total_ns += d;
    row.median_ns = median_int64_in_place(ds);
    row.share_pct = out.total_ns > 0 ? 100.0 * row.total_ns / out.total_ns : 0;
    rows.push_back(std::move(row));
  }
  // Every duration, in any order: the per-name medians above reordered only within each name.
  out.median_ns = median_int64_in_place(by_name);
  std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(top);
  out.top = std::move(rows);
  return out;
}

}  // namespace ts::analysis
