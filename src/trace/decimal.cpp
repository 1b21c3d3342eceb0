#include "trace/decimal.h"

#include <limits>

namespace ts::trace {

static constexpr uint64_t kPow10[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};

bool decimal_to_scaled_int(const char* p, const char* end, int scale, int64_t& out) {
  bool neg = false;
  if (p < end && (*p == '-' || *p == '+')) {
    neg = *p == '-';
    ++p;
  }
  uint64_t mant = 0;
  int sig = 0;       // significant digits kept in mant
  int dexp = 0;      // value = mant * 10^dexp
  bool any = false;  // at least one digit
  while (p < end && static_cast<unsigned>(*p - '0') < 10) {
    unsigned d = static_cast<unsigned>(*p - '0');
    any = true;
    if (sig < 19) {
      mant = mant * 10 + d;
      if (mant) ++sig;
    } else {
      ++dexp;
    }
    ++p;
  }
  int round_digit = -1;  // first dropped fractional digit, for rounding
  if (p < end && *p == '.') {
    ++p;
    while (p < end && static_cast<unsigned>(*p - '0') < 10) {
      unsigned d = static_cast<unsigned>(*p - '0');
      any = true;
      if (sig < 19) {
        mant = mant * 10 + d;
        if (mant) ++sig;
        --dexp;
      } else if (round_digit < 0) {
        round_digit = static_cast<int>(d);
      }
      ++p;
    }
  }
  if (!any) return false;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool eneg = false;
    if (p < end && (*p == '-' || *p == '+')) {
      eneg = *p == '-';
      ++p;
    }
    if (p == end || static_cast<unsigned>(*p - '0') >= 10) return false;
    int e = 0;
    while (p < end && static_cast<unsigned>(*p - '0') < 10) {
      if (e < 100000) e = e * 10 + (*p - '0');
      ++p;
    }
    dexp += eneg ? -e : e;
  }
  if (p != end) return false;
  if (round_digit >= 5 && mant < std::numeric_limits<uint64_t>::max()) {
    // Only reachable with 19 kept digits; the rounding below handles the common case.
    ++mant;
  }
  int shift = dexp + scale;
  uint64_t v;
  if (mant == 0) {
    v = 0;
  } else if (shift >= 0) {
    if (shift > 19) return false;
    uint64_t m = kPow10[shift];
    if (mant > std::numeric_limits<uint64_t>::max() / m) return false;
    v = mant * m;
  } else if (shift < -19) {
    v = 0;
  } else {
    uint64_t div = kPow10[-shift];
    v = mant / div;
    uint64_t rem = mant % div;
    if (rem >= div - rem) ++v;  // half away from zero
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

}  // namespace ts::trace
