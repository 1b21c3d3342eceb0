#pragma once
// A time series: (time, value) points in a ring buffer, one per metric.
#include <cstddef>
#include <vector>

#include "sample/ring_buffer.h"

namespace ts::sample {

struct Point {
  double t_s = 0;  // seconds (monotonic, or the driver's clock for driver samples)
  double v = 0;
};

class Series {
 public:
  explicit Series(size_t capacity = 6000) : ring_(capacity) {}
  void push(double t_s, double v) { ring_.push({t_s, v}); }
  size_t size() const { return ring_.size(); }
  bool empty() const { return ring_.empty(); }
  const Point& operator[](size_t i) const { return ring_[i]; }
  const Point& back() const { return ring_.back(); }
  // Points with t >= newest t - seconds (all points for seconds <= 0).
  std::vector<Point> window(double seconds) const;
  std::vector<double> values(double seconds = 0) const;

 private:
  RingBuffer<Point> ring_;
};

}  // namespace ts::sample
