// Steps (the TensorBoard plugin's definition; docs/ANALYSES.md).
//
// - A step is a host-side `ProfilerStep#N` complete event (cat cpu_op or user_annotation; in
//   bare-array traces, which have no cat, any host event). Its `gpu_user_annotation` copy on the
//   GPU timeline is ignored; a repeated N keeps the first.
// - The GPU work of a step: GPU events (kernel, memcpy, memset) whose launching runtime call
//   (linked by correlation id) lies entirely inside the step's host interval.
// - Extension, in step order: start = max(previous step's end, host start);
//   end = max(host end, end of the step's last GPU work), never before start. The first
//   "previous end" is step 0's host start, moved to the end of any GPU work launched outside
//   every step that finished before step 0's first GPU work. Only done when some step launched
//   GPU work. Steps therefore never overlap and their sum is the profiled wall time.
// - Tail: trailing steps that launched no GPU work are dropped, then the last one left too if it
//   launched fewer than 80% of the GPU events of the step before it (the profiler stopped early).
// - No ProfilerStep at all: one synthetic step from the first to the last host event
//   (cpu_op, user_annotation, runtime), extended the same way.
// - AnalyseOptions first_step/last_step keep only steps with first <= N <= last.
// The analysis window, in which every other analysis counts events, is
// [first kept step's start, last kept step's end).
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "analysis/passes.h"
#include "util/stats.h"

namespace ts::analysis {

namespace {

struct HostStep {
  int64_t number, start, end;
};

int64_t parse_step_number(std::string_view name) {
  auto pos = name.find('#');
  int64_t n = -1;
  if (pos != std::string_view::npos)
    std::from_chars(name.data() + pos + 1, name.data() + name.size(), n);
  return n;
}

}  // namespace

Intervals step_intervals(const StepSummary& steps) {
  Intervals out;
  out.reserve(steps.steps.size());
  for (const Step& st : steps.steps) out.push_back({st.start_ns, st.end_ns});
  return out;
}

int step_of(const StepSummary& steps, int64_t t) {
  const auto& v = steps.steps;
  auto it = std::upper_bound(v.begin(), v.end(), t,
                             [](int64_t x, const Step& st) { return x < st.start_ns; });
  if (it == v.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - v.begin()) : -1;
}

StepSummary analyse_steps(TraceIndex& idx, const AnalyseOptions& opt) {
  const auto& s = idx.s;
  StepSummary out;

  // 1. Host steps.
  std::vector<HostStep> host;
  std::unordered_set<int64_t> seen;
  for (uint32_t r : idx.host_ops) {
    if (!idx.flag(r, kProfilerStep)) continue;
    int64_t n = parse_step_number(s.name_of(r));
    if (n >= 0 && !seen.insert(n).second) continue;
    host.push_back({n, s.ts_ns[r], s.end_ns(r)});
  }
  if (host.empty()) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto* list : {&idx.host_ops, &idx.runtime})
      for (uint32_t r : *list) {
        lo = std::min(lo, s.ts_ns[r]);
        hi = std::max(hi, s.end_ns(r));
      }
    if (lo == INT64_MAX)
      for (uint32_t r : idx.gpu) {
        lo = std::min(lo, s.ts_ns[r]);
        hi = std::max(hi, s.end_ns(r));
      }
    if (lo == INT64_MAX) return out;  // nothing timed at all
    host.push_back({0, lo, hi});
    out.synthetic = true;
  }
  std::sort(host.begin(), host.end(),
            [](const HostStep& a, const HostStep& b) { return a.start < b.start; });

  // 2. GPU work launched inside each host step.
  const size_t n = host.size();
  std::vector<int64_t> dev_min(n, INT64_MAX), dev_max(n, INT64_MIN), dev_count(n, 0);
  auto host_step_of_runtime = [&](uint32_t rt) -> int {
    const int64_t t = s.ts_ns[rt], e = s.end_ns(rt);
    auto it = std::upper_bound(host.begin(), host.end(), t,
                               [](int64_t x, const HostStep& h) { return x < h.start; });
    if (it == host.begin()) return -1;
    --it;
    return e <= it->end ? static_cast<int>(it - host.begin()) : -1;
  };
  std::vector<uint32_t> unmatched;
  int64_t matched = 0;
  for (uint32_t g : idx.gpu) {
    uint32_t rt = idx.launcher(g);
    int k = rt == kNoRow ? -1 : host_step_of_runtime(rt);
    if (k < 0) {
      unmatched.push_back(g);
      continue;
    }
    dev_min[k] = std::min(dev_min[k], s.ts_ns[g]);
    dev_max[k] = std::max(dev_max[k], s.end_ns(g));
    ++dev_count[k];
    ++matched;
  }

  // 3. Extend to the GPU work (only when some step launched any).
  std::vector<Step> steps(n);
  for (size_t i = 0; i < n; ++i) {
    steps[i].number = host[i].number;
    steps[i].start_ns = host[i].start;
    steps[i].host_start_ns = host[i].start;
    steps[i].host_end_ns = host[i].end;
    steps[i].end_ns = host[i].end;
  }
  if (matched > 0) {
    int64_t prev_end = host[0].start;
    if (dev_min[0] != INT64_MAX)
      for (uint32_t g : unmatched)
        if (s.end_ns(g) < dev_min[0]) prev_end = std::max(prev_end, s.end_ns(g));
    for (size_t i = 0; i < n; ++i) {
      int64_t start = std::max(prev_end, host[i].start);
      int64_t end = host[i].end;
      if (dev_min[i] != INT64_MAX) end = std::max(end, dev_max[i]);
      end = std::max(end, start);
      steps[i].start_ns = start;
      steps[i].end_ns = end;
      prev_end = end;
    }
    // 4. Drop the incomplete tail.
    if (n > 1) {
      int64_t last = static_cast<int64_t>(n) - 1;
      while (last >= 0 && dev_count[last] == 0) --last;
      if (last >= 0) {
        size_t keep = static_cast<size_t>(last) + 1;
        if (last > 0 && dev_count[last - 1] * 0.8 > static_cast<double>(dev_count[last])) keep = last;
        out.dropped_tail_steps = static_cast<int64_t>(n - keep);
        steps.resize(keep);
      }
    }
  }

  // 5. --steps range.
  for (const Step& st : steps) {
    if (opt.first_step >= 0 && st.number < opt.first_step) continue;
    if (opt.last_step >= 0 && st.number > opt.last_step) continue;
    out.steps.push_back(st);
  }
  if (out.steps.empty()) return out;

  idx.window_begin = out.steps.front().start_ns;
  idx.window_end = out.steps.back().end_ns;
  std::vector<int64_t> durations;
  for (const Step& st : out.steps) {
    durations.push_back(st.duration());
    out.total_ns += st.duration();
  }
  out.mean_step_ns = out.total_ns / static_cast<int64_t>(durations.size());
  out.median_step_ns = median_int64(durations);
  out.p90_step_ns = percentile_nearest_rank(durations, 0.9);
  return out;
}

}  // namespace ts::analysis
