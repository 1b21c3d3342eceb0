// GPU timeline per step (docs/ANALYSES.md 9c), the strip the HTML report draws: for at most
// kTimelineSteps steps (all when there are that few; else evenly spaced ones, the slowest step
// always among them), each step cut into kTimelineBins equal bins, and per bin
//   busy_pct  the share of the bin some GPU event (kernel, copy, memset; any device or stream,
//             starting in the window) covers, rounded to the nearest multiple of 10 so runs stay
//             long (a gap narrower than a bin still lowers it once it fills 5% of the bin);
//   entry     the idle-attribution entry (gpu.attribution.entries) with the most idle time in the
//             bin; -1 when the bin shows no idle time (busy_pct 100); -2 when most of its idle
//             time lies outside the GPU's active span (before the window's first GPU event or
//             after its last: idle attribution has no gap there, so no piece covers it).
// Consecutive bins with equal (busy_pct, entry) are one run. A step shorter than
// kTimelineBins ns (no real step is) is left out rather than drawn with empty bins.
#include <algorithm>

#include "analysis/passes.h"

namespace ts::analysis {
namespace {

// Indices of the steps to draw: all, or kTimelineSteps evenly spaced ones (first and last among
// them) with the slowest swapped for the nearest picked one.
std::vector<size_t> pick_steps(const StepSummary& steps) {
  const size_t n = steps.steps.size();
  std::vector<size_t> pick;
  if (n <= static_cast<size_t>(kTimelineSteps)) {
    for (size_t i = 0; i < n; ++i) pick.push_back(i);
    return pick;
  }
  for (size_t k = 0; k < static_cast<size_t>(kTimelineSteps); ++k) pick.push_back(k * (n - 1) / (kTimelineSteps - 1));
  size_t slowest = 0;
  for (size_t i = 1; i < n; ++i)
    if (steps.steps[i].duration() > steps.steps[slowest].duration()) slowest = i;
  if (std::find(pick.begin(), pick.end(), slowest) != pick.end()) return pick;
  auto dist = [&](size_t a) { return a > slowest ? a - slowest : slowest - a; };
  *std::min_element(pick.begin(), pick.end(), [&](size_t a, size_t b) { return dist(a) < dist(b); }) = slowest;
  std::sort(pick.begin(), pick.end());
  return pick;
}

}  // namespace

GpuTimeline analyse_gpu_timeline(const TraceIndex& idx, const StepSummary& steps, const GpuTime& gpu) {
  GpuTimeline out;
  const auto& s = idx.s;
  if (!gpu.present || steps.steps.empty()) return out;
  out.bins = kTimelineBins;
  out.steps_total = static_cast<int64_t>(steps.steps.size());

  Intervals busy;
  for (uint32_t r : idx.gpu)  // sorted by start: merged as it grows
    if (idx.in_window(r)) add_merged(busy, s.ts_ns[r], s.end_ns(r));
  merge(busy);
  const auto& pieces = gpu.attribution.pieces;

  for (size_t i : pick_steps(steps)) {
    const Step& st = steps.steps[i];
    StepTimeline tl;
    tl.number = st.number;
    tl.start_ns = st.start_ns;
    tl.duration_ns = st.duration();
    if (tl.duration_ns < kTimelineBins) continue;
    Intervals bins;
    for (int b = 0; b < kTimelineBins; ++b)
      bins.push_back({st.start_ns + tl.duration_ns * b / kTimelineBins, st.start_ns + tl.duration_ns * (b + 1) / kTimelineBins});
    // Only this step's busy intervals and pieces (a pass over the whole lists per step would cost
    // steps x events on a large trace).
    auto lo = std::lower_bound(busy.begin(), busy.end(), st.start_ns, [](const Interval& x, int64_t t) { return x.end <= t; });
    auto hi = std::lower_bound(lo, busy.end(), st.end_ns, [](const Interval& x, int64_t t) { return x.begin < t; });
    const std::vector<int64_t> busy_ns = lengths_per_bin(Intervals(lo, hi), bins);
    auto p = std::lower_bound(pieces.begin(), pieces.end(), st.start_ns,
                              [](const IdlePiece& x, int64_t t) { return x.end <= t; });
    std::vector<std::pair<uint32_t, int64_t>> in_bin;  // (entry, idle ns in the bin): few per bin
    for (size_t b = 0; b < bins.size(); ++b) {
      const Interval& bin = bins[b];
      in_bin.clear();
      int64_t attributed = 0;
      for (auto q = p; q != pieces.end() && q->begin < bin.end; ++q) {
        const int64_t len = std::min(q->end, bin.end) - std::max(q->begin, bin.begin);
        if (len <= 0) continue;
        attributed += len;
        auto it = std::find_if(in_bin.begin(), in_bin.end(), [&](const auto& e) { return e.first == q->entry; });
        if (it == in_bin.end()) in_bin.emplace_back(q->entry, len);
        else it->second += len;
      }
      while (p != pieces.end() && p->end <= bin.end) ++p;  // pieces wholly inside this bin are done
      const int64_t len = bin.end - bin.begin, idle = len - busy_ns[b];
      const int32_t busy_pct = static_cast<int32_t>((busy_ns[b] * 10 + len / 2) / len) * 10;
      int32_t entry = -1;
      if (idle > 0 && busy_pct < 100) {
        entry = -2;
        auto top = std::max_element(in_bin.begin(), in_bin.end(), [](const auto& a, const auto& c) { return a.second < c.second; });
        // The idle time no piece covers lies outside the active span; it wins when larger.
        if (top != in_bin.end() && top->second >= idle - attributed) entry = static_cast<int32_t>(top->first);
      }
      if (!tl.runs.empty() && tl.runs.back().busy_pct == busy_pct && tl.runs.back().entry == entry)
        ++tl.runs.back().bins;
      else
        tl.runs.push_back({1, busy_pct, entry});
    }
    out.steps.push_back(std::move(tl));
  }
  return out;
}

}  // namespace ts::analysis
