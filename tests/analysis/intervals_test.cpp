#include "analysis/intervals.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ts::analysis
