#pragma once
// Half-open time intervals [begin, end) in ns, and the set operations the analyses need.
// A "merged" list is sorted by begin with no two intervals touching or overlapping;
// every function taking merged lists also returns one.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ts::analysis {

struct Interval {
  int64_t begin = 0, end = 0;
};
using Intervals = std::vector<Interval>;

// Sorts and merges in place (drops empty intervals). O(n log n).
void merge(Intervals& v);
// Appends [begin, end) to a merged list, merging it into the last interval where they meet.
// With intervals added in order of begin (rows of a time-sorted list), the list stays what
// merge() would make of them all, without holding one interval per row.
inline void add_merged(Intervals& v, int64_t begin, int64_t end) {
  if (end <= begin) return;
  if (!v.empty() && begin <= v.back().end) {
    if (end > v.back().end) v.back().end = end;
  } else {
    v.push_back({begin, end});
  }
}
Intervals merged(Intervals v);
// Total covered length of a merged list.
int64_t length(const Intervals& merged);
// a ∩ b, a \ b (both merged). Linear.
Intervals intersect(const Intervals& a, const Intervals& b);
Intervals subtract(const Intervals& a, const Intervals& b);
// Adds the length of each piece inside each of `bins` (sorted by begin; they may overlap) to
// per_bin. The pieces come in increasing order, so the first bin they can reach only moves on:
// that bin is all this keeps.
class BinLengths {
 public:
  void add(const Intervals& bins, int64_t lo, int64_t hi, std::vector<int64_t>& per_bin) {
    while (next_ < bins.size() && bins[next_].end <= lo) ++next_;
    for (size_t k = next_; k < bins.size() && bins[k].begin < hi; ++k)
      per_bin[k] += std::max<int64_t>(0, std::min(hi, bins[k].end) - std::max(lo, bins[k].begin));
  }

 private:
  size_t next_ = 0;
};
// A merged list as a generator for subtract_counting_from: `bool next(Interval&)`.
inline auto each_of(const Intervals& v) {
  return [&v, k = size_t{0}](Interval& iv) mutable { return k < v.size() ? (iv = v[k++], true) : false; };
}
// a \ b into `out` (whose memory is reused), adding the length of a ∩ b inside each of `bins`
// to per_bin: lengths_per_bin(intersect(a, b), bins) without the intersection's list. b is a
// generator, `bool next_b(Interval&)`, yielding a merged list in order, so it need not be stored
// (a long row list's union, made as it is consumed; each_of for a stored one). Linear.
template <class NextB>
void subtract_counting_from(const Intervals& a, NextB&& next_b, const Intervals& bins,
                            std::vector<int64_t>& per_bin, Intervals& out) {
  out.clear();
  BinLengths covered;
  Interval b{};
  bool have_b = next_b(b);
  for (const Interval& iv : a) {
    int64_t cur = iv.begin;
    while (cur < iv.end) {
      while (have_b && b.end <= cur) have_b = next_b(b);
      if (!have_b || b.begin >= iv.end) break;
      if (b.begin > cur) out.push_back({cur, b.begin});
      const int64_t lo = std::max(cur, b.begin), hi = std::min(b.end, iv.end);
      covered.add(bins, lo, hi, per_bin);
      cur = hi;
    }
    if (cur < iv.end) out.push_back({cur, iv.end});
  }
}
// The union of intervals given in order of begin, measured as it grows and never stored: its
// total length and its length inside each of `bins` (sorted by begin). Intervals that touch
// join, as in add_merged.
class UnionMeter {
 public:
  explicit UnionMeter(Intervals bins = {}) : bins_(std::move(bins)), per_bin(bins_.size(), 0) {}
  void add(int64_t begin, int64_t end) {
    if (end <= begin) return;
    if (open_ && begin <= cur_.end) {
      cur_.end = std::max(cur_.end, end);
      return;
    }
    flush();
    cur_ = {begin, end};
    open_ = true;
  }
  // Once, after the last add.
  void finish() { flush(); }

 private:
  void flush() {
    if (!open_) return;
    open_ = false;
    total += cur_.end - cur_.begin;
    lengths_.add(bins_, cur_.begin, cur_.end, per_bin);
  }
  Intervals bins_;
  BinLengths lengths_;
  Interval cur_{};
  bool open_ = false;

 public:
  int64_t total = 0;
  std::vector<int64_t> per_bin;
};
// Covered length of a merged list inside [begin, end). O(log n + k).
int64_t length_within(const Intervals& merged, int64_t begin, int64_t end);
// Covered length inside each of several disjoint bins sorted by begin. Linear in both.
std::vector<int64_t> lengths_per_bin(const Intervals& merged, const Intervals& bins);

}  // namespace ts::analysis
