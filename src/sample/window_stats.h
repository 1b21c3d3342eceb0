#pragma once
// Statistics over a window of samples: mean, percentiles, min/max.
#include <cstddef>
#include <span>
#include <vector>

namespace ts::sample {

struct WindowStats {
  size_t n = 0;
  double mean = -1, min = -1, max = -1;
  double p10 = -1, p50 = -1, p90 = -1;
};

// Percentiles by linear interpolation between closest ranks (numpy's default, util/stats.h).
WindowStats window_stats(std::span<const double> values);

// Percentiles over a whole run without keeping every sample: integer bins 0..100 for
// percentages (NVML utilisation is an integer percent).
class PercentHistogram {
 public:
  void add(double pct);
  size_t count() const { return n_; }
  double mean() const { return n_ ? sum_ / n_ : -1; }
  double percentile(double pct) const;  // bin value, -1 when empty

 private:
  size_t bins_[101] = {};
  size_t n_ = 0;
  double sum_ = 0;
};

}  // namespace ts::sample
