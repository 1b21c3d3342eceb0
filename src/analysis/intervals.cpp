#include "analysis/intervals.h"

#include <algorithm>

namespace ts::analysis {

void merge(Intervals& v) {
  // Most callers build their intervals from time-ordered row lists: check before sorting.
  auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  if (!std::is_sorted(v.begin(), v.end(), by_begin)) std::sort(v.begin(), v.end(), by_begin);
  size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.end <= iv.begin) continue;
    if (out > 0 && iv.begin <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, iv.end);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

Intervals merged(Intervals v) {
  merge(v);
  return v;
}

int64_t length(const Intervals& m) {
  int64_t total = 0;
  for (const Interval& iv : m) total += iv.end - iv.begin;
  return total;
}

Intervals intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin, b[j].begin);
    int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return out;
}

Intervals subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (const Interval& iv : a) {
    int64_t cur = iv.begin;
    while (j < b.size() && b[j].end <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin < iv.end) {
      if (b[k].begin > cur) out.push_back({cur, b[k].begin});
      cur = std::max(cur, b[k].end);
      if (cur >= iv.end) break;
      ++k;
    }
    if (cur < iv.end) out.push_back({cur, iv.end});
  }
  return out;
}

int64_t length_within(const Intervals& m, int64_t begin, int64_t end) {
  if (begin >= end) return 0;
  auto it = std::upper_bound(m.begin(), m.end(), begin,
                             [](int64_t t, const Interval& iv) { return t < iv.end; });
  int64_t total = 0;
  for (; it != m.end() && it->begin < end; ++it)
    total += std::min(it->end, end) - std::max(it->begin, begin);
  return total;
}

std::vector<int64_t> lengths_per_bin(const Intervals& m, const Intervals& bins) {
  std::vector<int64_t> out(bins.size(), 0);
  size_t i = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    while (i < m.size() && m[i].end <= bins[b].begin) ++i;
    for (size_t k = i; k < m.size() && m[k].begin < bins[b].end; ++k)
      out[b] += std::min(m[k].end, bins[b].end) - std::max(m[k].begin, bins[b].begin);
  }
  return out;
}

}  // namespace ts::analysis
