#include "trace/decimal.h"

#include <gtest/gtest.h>

#include <string>

namespace ts::trace {
namespace {

int64_t ns(const std::string& s) {
  int64_t v = 0;
  EXPECT_TRUE(micros_text_to_ns(s.data(), s.data() + s.size(), v)) << s;
  return v;
}
bool ok(const std::string& s) {
  int64_t v;
  return micros_text_to_ns(s.data(), s.data() + s.size(), v);
}

TEST(Decimal, EpochMicrosecondsKeepNanoseconds) {
  EXPECT_EQ(ns("1712195495505582.988"), 1712195495505582988);
  EXPECT_EQ(ns("1712195495505582.001"), 1712195495505582001);
  EXPECT_EQ(ns("1623142623531639"), 1623142623531639000);
  EXPECT_EQ(ns("4203669604613.811"), 4203669604613811);
}

TEST(Decimal, FormsAndRounding) {
  EXPECT_EQ(ns("0"), 0);
  EXPECT_EQ(ns("4.928"), 4928);
  EXPECT_EQ(ns("5.300000"), 5300);
  EXPECT_EQ(ns("0.0004"), 0);
  EXPECT_EQ(ns("0.0005"), 1);
  EXPECT_EQ(ns("1.2345"), 1235);  // half away from zero
  EXPECT_EQ(ns("-1.2345"), -1235);
  EXPECT_EQ(ns("-5"), -5000);
  EXPECT_EQ(ns("1.5e3"), 1500000);
  EXPECT_EQ(ns("15E-1"), 1500);
  EXPECT_EQ(ns("2.5e-3"), 3);
  EXPECT_EQ(ns("9223372036854775"), 9223372036854775000);
  EXPECT_EQ(ns("00012"), 12000);
}

TEST(Decimal, Rejects) {
  EXPECT_FALSE(ok(""));
  EXPECT_FALSE(ok("-"));
  EXPECT_FALSE(ok("."));
  EXPECT_FALSE(ok("1.2.3"));
  EXPECT_FALSE(ok("1e"));
  EXPECT_FALSE(ok("12a"));
  EXPECT_FALSE(ok("9223372036854776"));  // overflows int64 ns
  EXPECT_FALSE(ok("1e30"));
  EXPECT_EQ(ns("1e-30"), 0);
}

}  // namespace
}  // namespace ts::trace
