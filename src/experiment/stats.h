#pragma once
// Small statistics for experiment results: every number reported is computed here, once.
#include <vector>

#include "util/stats.h"  // median, percentile

namespace ts::experiment {

// Spread of per-step times: (p90 - p10) / median, in percent. 0 with fewer than 2 values.
double spread_pct(const std::vector<double>& v);

struct LinearFit {
  double intercept = 0, slope = 0;
  int n = 0;
};
// Least squares y = intercept + slope * x; n < 2 (or all x equal) gives slope 0.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace ts::experiment
