#include "diagnose/growth_trend.h"

#include <algorithm>
#include <cmath>

#include "util/stats.h"

namespace ts::diagnose {

namespace {

// Median of the pairwise slopes among points [lo, hi) of `idx`, pairs within one segment only,
// subsampled to ~200 points so long runs stay cheap.
double theil_sen(const std::vector<double>& x, const std::vector<double>& y, const std::vector<int>& seg,
                 const std::vector<size_t>& idx, size_t lo, size_t hi) {
  size_t n = hi - lo, stride = std::max<size_t>(1, n / 200);
  std::vector<double> s;
  for (size_t a = lo; a < hi; a += stride)
    for (size_t b = a + stride; b < hi; b += stride) {
      size_t i = idx[a], j = idx[b];
      if (seg[i] == seg[j] && x[j] != x[i]) s.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
  return s.empty() ? 0 : median(std::move(s));
}

}  // namespace

GrowthTrend growth_trend(const std::vector<double>& x, const std::vector<double>& y, const std::vector<int>& segment) {
  GrowthTrend g;
  std::vector<size_t> idx;
  for (size_t i = 0; i < y.size() && i < x.size() && i < segment.size(); ++i)
    if (segment[i] >= 0 && y[i] >= 0) idx.push_back(i);
  g.points = static_cast<int>(idx.size());
  if (idx.size() < 2) return g;
  g.span_steps = x[idx.back()] - x[idx.front()];
  g.slope = theil_sen(x, y, segment, idx, 0, idx.size());
  g.grown = g.slope * g.span_steps;
  // Residuals about the line, each segment with its own intercept (a one-off jump between
  // segments is not noise).
  std::vector<double> res;
  {
    std::vector<std::vector<double>> by_seg;
    for (size_t i : idx) {
      size_t s = static_cast<size_t>(segment[i]);
      if (by_seg.size() <= s) by_seg.resize(s + 1);
      by_seg[s].push_back(y[i] - g.slope * x[i]);
    }
    for (auto& v : by_seg) {
      if (v.empty()) continue;
      double c = median(std::vector<double>(v));
      for (double r : v) res.push_back(std::abs(r - c));
    }
  }
  g.noise = 1.4826 * median(std::move(res));
  size_t third = idx.size() / 3;
  g.tail_slope = idx.size() >= 6 ? theil_sen(x, y, segment, idx, idx.size() - std::max<size_t>(third, 3), idx.size()) : g.slope;
  // Kendall's tau over a subsample (pairs within a segment).
  {
    size_t n = idx.size(), stride = std::max<size_t>(1, n / 200);
    double conc = 0, disc = 0;
    for (size_t a = 0; a < n; a += stride)
      for (size_t b = a + stride; b < n; b += stride) {
        size_t i = idx[a], j = idx[b];
        if (segment[i] != segment[j]) continue;
        double d = (y[j] - y[i]) * (x[j] - x[i]);
        if (d > 0) ++conc;
        else if (d < 0) ++disc;
      }
    g.tau = conc + disc > 0 ? (conc - disc) / (conc + disc) : 0;
  }
  g.rising = g.points >= kGrowthMinRisingPoints && g.slope > 0 && g.grown >= kGrowthNoiseSigmas * g.noise &&
             g.grown >= kGrowthMinGrownBytes && g.tau >= kGrowthMinTau && g.tail_slope >= kGrowthTailShare * g.slope;
  g.leak = g.rising && g.points >= kGrowthMinPoints && g.span_steps >= kGrowthMinSpanSteps;
  return g;
}

}  // namespace ts::diagnose
