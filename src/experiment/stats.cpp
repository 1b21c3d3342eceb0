#include "experiment/stats.h"

#include <algorithm>

namespace ts::experiment {

double spread_pct(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double m = median(v);
  return m > 0 ? 100.0 * (percentile(v, 0.9) - percentile(v, 0.1)) / m : 0;
}

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  LinearFit f;
  f.n = int(std::min(x.size(), y.size()));
  if (f.n == 0) return f;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < f.n; ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  double d = f.n * sxx - sx * sx;
  if (f.n < 2 || d == 0) {
    f.intercept = sy / f.n;
    return f;
  }
  f.slope = (f.n * sxy - sx * sy) / d;
  f.intercept = (sy - f.slope * sx) / f.n;
  return f;
}

}  // namespace ts::experiment
