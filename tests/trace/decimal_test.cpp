#include "trace/decimal.h"
#include "trace/json_scan.h"

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

// The parser's in-place fast path against the general routine, on every digit count around the
// 8-byte word, with every kind of byte after the number (including bytes whose +6 carries).
TEST(Decimal, FastPathAgreesWithTheGeneralRoutine) {
  const std::string digits = "9081726354091827364";
  const char after[] = {',', '}', ']', ' ', '"', '\0', '.', 'e', 'E', '-', '+', '7', '/', ':', '\xFA', '\xFF', 'a'};
  size_t fast = 0;
  for (bool neg : {false, true})
    for (size_t nint = 0; nint <= 19; ++nint)
      for (size_t nfrac = 0; nfrac <= 4; ++nfrac)
        for (char a : after)
          for (int scale = 0; scale <= 3; ++scale) {
            std::string num = std::string(neg ? "-" : "") + digits.substr(0, nint);
            if (nfrac) num += "." + digits.substr(19 - nfrac);
            std::string buf = num + a + std::string(24, a);  // the fast path reads 8 bytes ahead
            int64_t v = 0;
            const char* end = detail::parse_scaled_fast(buf.data(), scale, v);
            // The plain shapes must take the fast path; anything it takes must be exact.
            const bool plain = nint >= 1 && nint <= 16 && (nfrac == 0 || nfrac <= static_cast<size_t>(scale)) &&
                               !detail::kBytes.number[static_cast<unsigned char>(a)] &&
                               !(nfrac == 0 && a == '.');
            SCOPED_TRACE(num + " then byte " + std::to_string(static_cast<unsigned char>(a)) + ", scale " +
                         std::to_string(scale));
            if (plain) {
              ASSERT_NE(end, nullptr);
            }
            if (!end) continue;
            ++fast;
            ASSERT_EQ(end, buf.data() + num.size());
            int64_t want = 0;
            ASSERT_TRUE(decimal_to_scaled_int(num.data(), num.data() + num.size(), scale, want));
            EXPECT_EQ(v, want);
          }
  EXPECT_GT(fast, 1000u);
}

}  // namespace
}  // namespace ts::trace
