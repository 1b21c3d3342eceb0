// Synchronisations (docs/ANALYSES.md): host calls that block until the GPU catches up.
// Counted, inside the analysis window:
//   runtime calls   cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize (and the
//                   hip* names), blocking cudaMemcpy* / hipMemcpy* (no "Async");
//   .item() ops     aten::item not inside another aten::item, and aten::_local_scalar_dense not
//                   inside any aten::item, on the same thread (containment with equal ends allowed,
//                   so zero-length records nest too): one .item() counts once;
//   cuda_sync       Kineto's sync events (Stream Sync, Event Sync, Context Sync, ...), each its
//                   own row. They duplicate the runtime call with the same correlation id, so
//                   they enter the totals only when no such runtime call was traced;
//                   "Stream Wait Event" (a GPU-side dependency, the host does not block) never does.
// Rows list each kind with its own count and time (rows overlap: an aten::item contains its
// cudaStreamSynchronize). Totals never double count: per host thread, the intervals above are
// merged; count = the number of merged clusters (one .item() with its memcpy and stream sync is
// one), time = their covered length. Step.syncs: clusters starting inside each step.
#include <algorithm>
#include <map>

#include "analysis/passes.h"

namespace ts::analysis {

SyncStats analyse_syncs(const TraceIndex& idx, StepSummary& steps) {
  const auto& s = idx.s;
  SyncStats out;
  std::map<std::string, SyncRow> rows;
  std::map<std::pair<int64_t, int64_t>, Intervals> by_thread;
  auto take = [&](uint32_t r, bool in_totals) {
    SyncRow& row = rows[std::string(s.name_of(r))];
    ++row.count;
    row.time_ns += s.dur_ns[r];
    if (in_totals) by_thread[{s.pid(r), s.tid(r)}].push_back({s.ts_ns[r], s.end_ns(r)});
  };

  for (uint32_t r : idx.runtime)
    if (idx.flag(r, kRuntimeSync | kBlockingMemcpy) && idx.in_window(r)) take(r, true);

  // aten::item, then _local_scalar_dense outside any item on its thread.
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> items;
  std::vector<uint32_t> dense;
  for (uint32_t r : idx.host_ops) {
    if (!idx.flag(r, kItemOp | kScalarDense) || !idx.in_window(r)) continue;
    if (idx.flag(r, kItemOp)) items[{s.pid(r), s.tid(r)}].push_back(r);
    else dense.push_back(r);
  }
  // Per thread: items by start (host_ops is sorted by start) and the running maximum of their
  // ends, so "some item starting at or before t ends at or after e" is one binary search.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> max_end;
  for (auto& [thread, v] : items) {
    // Outer calls first when two start together.
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      return s.ts_ns[a] != s.ts_ns[b] ? s.ts_ns[a] < s.ts_ns[b] : s.dur_ns[a] > s.dur_ns[b];
    });
    auto& m = max_end[thread];
    int64_t hi = INT64_MIN;
    for (uint32_t r : v) {
      // Nested in an earlier item of the same thread: the same .item() call.
      if (hi >= s.end_ns(r)) {
        m.push_back(hi);
        continue;
      }
      take(r, true);
      ++out.item_calls;
      hi = std::max(hi, s.end_ns(r));
      m.push_back(hi);
    }
  }
  for (uint32_t r : dense) {
    auto it = items.find({s.pid(r), s.tid(r)});
    bool nested = false;
    if (it != items.end()) {
      const auto& v = it->second;
      auto pos = std::upper_bound(v.begin(), v.end(), s.ts_ns[r],
                                  [&](int64_t t, uint32_t item) { return t < s.ts_ns[item]; });
      nested = pos != v.begin() && max_end[it->first][pos - v.begin() - 1] >= s.end_ns(r);
    }
    if (nested) continue;
    take(r, true);
    ++out.item_calls;
  }

  for (uint32_t r : idx.cuda_sync) {
    if (!idx.in_window(r)) continue;
    std::string_view n = s.name_of(r);
    const bool duplicate = s.correlation[r] != trace::kNone &&
                           idx.runtime_of_corr(s.correlation[r]) != kNoRow;
    take(r, !duplicate && n != "Stream Wait Event");
  }

  for (auto& [name, row] : rows) {
    row.kind = name;
    out.rows.push_back(row);
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const SyncRow& a, const SyncRow& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.kind < b.kind;
  });

  // Cluster per thread (zero-length calls form their own cluster; merge() would drop them).
  for (auto& [thread, v] : by_thread) {
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 0; i < v.size();) {
      int64_t begin = v[i].begin, end = v[i].end;
      size_t j = i + 1;
      while (j < v.size() && v[j].begin <= end) end = std::max(end, v[j++].end);
      ++out.count;
      out.time_ns += end - begin;
      int st = step_of(steps, begin);
      if (st >= 0) ++steps.steps[st].syncs;
      i = j;
    }
  }
  const size_t nsteps = steps.steps.size();
  if (nsteps > 0) {
    out.per_step = static_cast<double>(out.count) / nsteps;
    out.time_per_step_ns = static_cast<double>(out.time_ns) / nsteps;
  }
  if (steps.total_ns > 0) out.pct_of_step = 100.0 * out.time_ns / steps.total_ns;
  return out;
}

}  // namespace ts::analysis
