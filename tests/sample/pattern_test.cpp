// Pattern detection on synthetic utilisation series of known shape.
#include <gtest/gtest.h>

#include <random>

#include "sample/pattern.h"
#include "sample/ring_buffer.h"
#include "sample/window_stats.h"

using namespace ts::sample;

namespace {

// A square wave: busy (`hi`) for duty*period, idle (`lo`) for the rest, sampled every dt.
std::vector<Point> square(double period_s, double duty, double dt, double seconds, double hi = 100,
                          double lo = 0, double noise = 0, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, noise > 0 ? noise : 1);
  std::vector<Point> out;
  for (int i = 0; i * dt < seconds - 1e-9; ++i) {
    const double t = i * dt;
    double phase = std::fmod(t + 1e-9, period_s) / period_s;
    double v = phase < duty ? hi : lo;
    if (noise > 0) v = std::clamp(v + n(rng), 0.0, 100.0);
    out.push_back({t, v});
  }
  return out;
}

}  // namespace

TEST(Pattern, SawtoothKnownPeriodAndDuty) {
  // 150 ms period, busy 60% (9 of 15 samples), sampled at 10 ms for 6 s.
  auto pts = square(0.150, 0.60, 0.010, 6.0);
  Pattern p = detect_pattern(pts);
  EXPECT_EQ(p.kind, "sawtooth");
  EXPECT_NEAR(p.period_ms, 150, 1);
  EXPECT_NEAR(p.duty_pct, 60, 1);
  EXPECT_NEAR(p.idle_pct, 40, 1);
  EXPECT_NEAR(p.cycles, 38, 1);  // 39 rising edges after the busy start at t=0
  EXPECT_EQ(describe(p), "sawtooth 150 ms, GPU idle 40%: the GPU waits for data");
}

TEST(Pattern, SawtoothWithNoiseAndPartialLevels) {
  // 1 s period, 30% busy at ~85% util, ~5% util while waiting, noise sd 5, sampled at 100 ms.
  auto pts = square(1.0, 0.3, 0.1, 30.0, 85, 5, 5, 7);
  Pattern p = detect_pattern(pts);
  EXPECT_EQ(p.kind, "sawtooth");
  EXPECT_NEAR(p.period_ms, 1000, 100);
  EXPECT_NEAR(p.duty_pct, 30, 6);
}

TEST(Pattern, SteadyHighSteadyLowIdle) {
  EXPECT_EQ(detect_pattern(square(1, 1, 0.1, 10, 96, 96, 3)).kind, "steady-high");
  EXPECT_EQ(detect_pattern(square(1, 1, 0.1, 10, 35, 35, 5)).kind, "steady-low");
  auto idle = detect_pattern(square(1, 1, 0.1, 10, 0, 0));
  EXPECT_EQ(idle.kind, "idle");
  EXPECT_EQ(idle.idle_pct, 100);
  EXPECT_EQ(detect_pattern(square(1, 1, 0.1, 0.5, 50, 50)).kind, "unknown");  // 5 samples
}

TEST(Pattern, RandomOnOffIsIrregularNotSawtooth) {
  std::mt19937 rng(42);
  std::bernoulli_distribution coin(0.5);
  std::vector<Point> pts;
  for (int i = 0; i < 600; ++i) pts.push_back({i * 0.01, coin(rng) ? 100.0 : 0.0});
  EXPECT_EQ(detect_pattern(pts).kind, "irregular");
}

TEST(Pattern, FewBurstsAreNotASawtooth) {
  // Two busy bursts in 10 s: alternation, but not a rhythm.
  std::vector<Point> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({i * 0.1, (i > 20 && i < 30) || (i > 70 && i < 75) ? 100.0 : 0.0});
  EXPECT_EQ(detect_pattern(pts).kind, "irregular");
}

TEST(WindowStats, PercentilesAndHistogram) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  WindowStats w = window_stats(v);
  EXPECT_DOUBLE_EQ(w.mean, 50.5);
  EXPECT_DOUBLE_EQ(w.p50, 50.5);
  EXPECT_DOUBLE_EQ(w.p10, 10.9);
  EXPECT_DOUBLE_EQ(w.p90, 90.1);
  PercentHistogram h;
  for (int i = 1; i <= 100; ++i) h.add(i);
  h.add(-1);  // not available: ignored
  EXPECT_EQ(h.count(), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.percentile(10), 10);
  EXPECT_EQ(h.percentile(90), 90);
}

TEST(RingBuffer, KeepsNewestInOrder) {
  RingBuffer<int> r(3);
  for (int i = 1; i <= 5; ++i) r.push(i);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], 3);
  EXPECT_EQ(r.back(), 5);
  EXPECT_EQ(r.last(2), (std::vector<int>{4, 5}));
  Series s(4);
  for (int i = 0; i < 10; ++i) s.push(i * 0.5, i);
  EXPECT_EQ(s.values(1.0), (std::vector<double>{7, 8, 9}));
}
