#include "sample/series.h"

namespace ts::sample {

std::vector<Point> Series::window(double seconds) const {
  std::vector<Point> out;
  if (ring_.empty()) return out;
  const double from = ring_.back().t_s - seconds;
  size_t i = 0;
  if (seconds > 0)
    while (i < ring_.size() && ring_[i].t_s < from) ++i;
  out.reserve(ring_.size() - i);
  for (; i < ring_.size(); ++i) out.push_back(ring_[i]);
  return out;
}

std::vector<double> Series::values(double seconds) const {
  std::vector<double> out;
  for (const Point& p : window(seconds)) out.push_back(p.v);
  return out;
}

}  // namespace ts::sample
