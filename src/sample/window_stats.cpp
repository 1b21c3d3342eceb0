#include "sample/window_stats.h"
#include "util/stats.h"

#include <algorithm>
#include <cmath>

namespace ts::sample {

WindowStats window_stats(std::span<const double> values) {
  WindowStats w;
  w.n = values.size();
  if (values.empty()) return w;
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double v : s) sum += v;
  w.mean = sum / static_cast<double>(s.size());
  w.min = s.front();
  w.max = s.back();
  w.p10 = percentile_sorted(s, 0.10);
  w.p50 = percentile_sorted(s, 0.50);
  w.p90 = percentile_sorted(s, 0.90);
  return w;
}

void PercentHistogram::add(double pct) {
  if (!(pct >= 0)) return;  // also drops NaN and "not available" (-1)
  int b = static_cast<int>(std::lround(std::min(pct, 100.0)));
  ++bins_[b];
  ++n_;
  sum_ += pct;
}

double PercentHistogram::percentile(double pct) const {
  if (!n_) return -1;
  // Nearest rank over the binned values.
  size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(n_)));
  if (rank < 1) rank = 1;
  size_t seen = 0;
  for (int b = 0; b <= 100; ++b) {
    seen += bins_[b];
    if (seen >= rank) return b;
  }
  return 100;
}

}  // namespace ts::sample
