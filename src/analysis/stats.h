#pragma once
// Small order statistics shared by the analyses.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace ts::analysis {

// Median (mean of the two middle values, rounded down, for even counts); 0 when empty.
inline int64_t median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  if (v.size() % 2 == 1) return v[m];
  const int64_t hi = v[m];
  const int64_t lo = *std::max_element(v.begin(), v.begin() + m);
  return lo + (hi - lo) / 2;
}

// Nearest-rank percentile, q in (0, 1]; 0 when empty.
inline int64_t percentile_of(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  k = std::clamp<size_t>(k, 1, v.size());
  return v[k - 1];
}

}  // namespace ts::analysis
