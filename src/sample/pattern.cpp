#include "sample/pattern.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "sample/window_stats.h"
#include "util/stats.h"

namespace ts::sample {

Pattern detect_pattern(std::span<const Point> pts) {
  Pattern p;
  if (pts.size() < 8) return p;
  std::vector<double> v;
  v.reserve(pts.size());
  for (const auto& x : pts) v.push_back(x.v);
  WindowStats w = window_stats(v);
  p.mean_pct = w.mean;
  const double lo = percentile(v, 0.05), hi = percentile(v, 0.95), range = hi - lo;
  auto share_below = [&](double thr) {
    size_t n = 0;
    for (double x : v) n += x < thr;
    return 100.0 * static_cast<double>(n) / static_cast<double>(v.size());
  };
  if (w.mean < 5 && w.p90 < 10) {
    p.kind = "idle";
    p.idle_pct = share_below(5);
    return p;
  }
  if (range < 30) {
    p.kind = w.mean >= 70 ? "steady-high" : "steady-low";
    p.idle_pct = share_below(5);
    return p;
  }
  // Busy/idle with hysteresis, so noise around one level does not flip the state.
  const double enter = lo + 0.6 * range, leave = lo + 0.4 * range;
  p.idle_pct = share_below(leave);
  bool busy = v[0] >= lo + 0.5 * range;
  std::vector<double> rises;
  std::vector<char> state(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!busy && v[i] >= enter) {
      busy = true;
      if (i > 0) rises.push_back(pts[i].t_s);
    } else if (busy && v[i] <= leave) {
      busy = false;
    }
    state[i] = busy;
  }
  p.kind = "irregular";
  if (rises.size() < 3) return p;
  std::vector<double> periods;
  for (size_t i = 1; i < rises.size(); ++i) periods.push_back(rises[i] - rises[i - 1]);
  const double med = median(periods);
  std::vector<double> dev;
  for (double x : periods) dev.push_back(std::fabs(x - med));
  const double mad = 1.4826 * median(dev);  // ~ standard deviation for normal jitter
  std::vector<double> dts;
  for (size_t i = 1; i < pts.size(); ++i) dts.push_back(pts[i].t_s - pts[i - 1].t_s);
  const double dt = median(dts);
  p.cycles = static_cast<int>(periods.size());
  // Regular (spread < 30% of the period) and resolved by at least 3 samples per period.
  if (med <= 0 || mad / med >= 0.3 || med < 3 * dt) return p;
  // Duty over whole cycles: each sample holds its state until the next sample.
  double busy_t = 0, total_t = 0;
  for (size_t i = 0; i + 1 < pts.size(); ++i) {
    if (pts[i].t_s < rises.front() || pts[i].t_s >= rises.back()) continue;
    const double d = pts[i + 1].t_s - pts[i].t_s;
    total_t += d;
    if (state[i]) busy_t += d;
  }
  p.kind = "sawtooth";
  p.period_ms = med * 1000.0;
  p.duty_pct = total_t > 0 ? 100.0 * busy_t / total_t : 0;
  p.idle_pct = 100.0 - p.duty_pct;
  return p;
}

std::string describe(const Pattern& p) {
  if (p.kind == "idle") return "idle: nothing runs on the GPU";
  if (p.kind == "sawtooth")
    return fmt::format("sawtooth {:.0f} ms, GPU idle {:.0f}%: the GPU waits for data", p.period_ms,
                       p.idle_pct);
  if (p.kind == "steady-high")
    return fmt::format("steady high ({:.0f}%): the GPU is kept busy (check SM/tensor activity)",
                       p.mean_pct);
  if (p.kind == "steady-low")
    return fmt::format("steady low ({:.0f}%): the GPU is never given enough work", p.mean_pct);
  if (p.kind == "irregular")
    return fmt::format("irregular (mean {:.0f}%, idle {:.0f}%): busy and idle without a rhythm",
                       p.mean_pct, p.idle_pct);
  return "not enough samples yet";
}

}  // namespace ts::sample
