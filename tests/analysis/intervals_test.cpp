#include "analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ts::analysis {
namespace {

TEST(Intervals, MergeSortsJoinsTouchingAndDropsEmpty) {
  Intervals v{{10, 20}, {0, 5}, {5, 7}, {15, 30}, {40, 40}};
  merge(v);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].begin, 0);
  EXPECT_EQ(v[0].end, 7);
  EXPECT_EQ(v[1].begin, 10);
  EXPECT_EQ(v[1].end, 30);
  EXPECT_EQ(length(v), 27);
}

TEST(Intervals, IntersectAndSubtract) {
  Intervals a{{0, 10}, {20, 30}}, b{{5, 25}};
  Intervals i = intersect(a, b);
  ASSERT_EQ(i.size(), 2u);
  EXPECT_EQ(length(i), 10);
  Intervals d = subtract(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].begin, 0);
  EXPECT_EQ(d[0].end, 5);
  EXPECT_EQ(d[1].begin, 25);
  EXPECT_EQ(d[1].end, 30);
  // b splits one interval in several pieces.
  Intervals e = subtract({{0, 100}}, {{10, 20}, {30, 40}, {90, 120}});
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(length(e), 70);
  EXPECT_TRUE(subtract({{0, 10}}, {{0, 10}}).empty());
}

TEST(Intervals, LengthWithinAndPerBin) {
  Intervals m{{0, 10}, {20, 30}, {40, 50}};
  EXPECT_EQ(length_within(m, 5, 45), 5 + 10 + 5);
  EXPECT_EQ(length_within(m, 10, 20), 0);
  auto per = lengths_per_bin(m, {{0, 25}, {25, 45}, {45, 100}});
  ASSERT_EQ(per.size(), 3u);
  EXPECT_EQ(per[0], 15);
  EXPECT_EQ(per[1], 10);
  EXPECT_EQ(per[2], 5);
}

// subtract_counting_from is subtract() plus lengths_per_bin(intersect()) in one pass: checked
// against those two on random merged lists, with bins that pieces straddle.
TEST(Intervals, SubtractCountingAndUnionMeterMatchTheStoredLists) {
  std::mt19937 rng(7);
  auto random_merged = [&](int n, int64_t span) {
    Intervals v;
    for (int i = 0; i < n; ++i) {
      const int64_t b = static_cast<int64_t>(rng() % span);
      v.push_back({b, b + 1 + static_cast<int64_t>(rng() % (span / 8 + 1))});
    }
    merge(v);
    return v;
  };
  Intervals rest{{99, 99}};  // stale content: the call must clear it
  for (int round = 0; round < 2000; ++round) {
    const int64_t span = 50 + rng() % 2000;
    const Intervals a = random_merged(1 + rng() % 12, span), b = random_merged(rng() % 12, span);
    // Bins sorted by begin; every other round they overlap (steps that overlap in odd traces).
    Intervals bins = random_merged(1 + rng() % 6, span);
    if (round % 2) {
      for (int k = 0; k < 3; ++k) {
        const int64_t b = static_cast<int64_t>(rng() % span);
        bins.push_back({b, b + 1 + static_cast<int64_t>(rng() % span)});
      }
      std::sort(bins.begin(), bins.end(), [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
    }
    std::vector<int64_t> per(bins.size(), 0);
    subtract_counting_from(a, each_of(b), bins, per, rest);
    const Intervals want = subtract(a, b);
    ASSERT_EQ(rest.size(), want.size()) << "round " << round;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rest[i].begin, want[i].begin);
      EXPECT_EQ(rest[i].end, want[i].end);
    }
    EXPECT_EQ(per, lengths_per_bin(intersect(a, b), bins)) << "round " << round;
  }
  // UnionMeter: the union of intervals added in order of begin, measured without being stored.
  for (int round = 0; round < 500; ++round) {
    const int64_t span = 50 + rng() % 2000;
    Intervals raw;
    for (int i = 0, n = rng() % 20; i < n; ++i) {
      const int64_t b = static_cast<int64_t>(rng() % span);
      raw.push_back({b, b + static_cast<int64_t>(rng() % (span / 6 + 1))});  // some empty
    }
    std::sort(raw.begin(), raw.end(), [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
    Intervals bins = random_merged(1 + rng() % 6, span);
    UnionMeter meter(bins);
    for (const Interval& iv : raw) meter.add(iv.begin, iv.end);
    meter.finish();
    const Intervals u = merged(raw);
    EXPECT_EQ(meter.total, length(u)) << "round " << round;
    EXPECT_EQ(meter.per_bin, lengths_per_bin(u, bins)) << "round " << round;
  }
  // Counts add to what per_bin already holds (one vector per role, filled role by role).
  std::vector<int64_t> per{5};
  const Intervals one{{0, 10}}, hole{{2, 4}};
  subtract_counting_from(one, each_of(hole), one, per, rest);
  EXPECT_EQ(per[0], 7);
  EXPECT_EQ(length(rest), 8);
}

}  // namespace
}  // namespace ts::analysis
