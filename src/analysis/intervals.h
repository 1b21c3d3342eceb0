#pragma once
// Half-open time intervals [begin, end) in ns, and the set operations the analyses need.
// A "merged" list is sorted by begin with no two intervals touching or overlapping;
// every function taking merged lists also returns one.
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
// a \ b into `out` (whose memory is reused), adding the length of a ∩ b inside each of `bins`
// (disjoint, sorted by begin) to per_bin: lengths_per_bin(intersect(a, b), bins) without the
// intersection's list. All merged. Linear.
void subtract_counting(const Intervals& a, const Intervals& b, const Intervals& bins, std::vector<int64_t>& per_bin,
                       Intervals& out);
// Covered length of a merged list inside [begin, end). O(log n + k).
int64_t length_within(const Intervals& merged, int64_t begin, int64_t end);
// Covered length inside each of several disjoint bins sorted by begin. Linear in both.
std::vector<int64_t> lengths_per_bin(const Intervals& merged, const Intervals& bins);

}  // namespace ts::analysis
