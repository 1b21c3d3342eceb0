#pragma once
// Exact decimal-text to integer conversion for trace numbers.
//
// Trace timestamps are microseconds written as text ("1712195495505582.988"). A double holds
// only ~15.9 significant digits, so a 16-digit epoch value loses its nanoseconds if parsed as
// one. These functions read the digits into an integer and scale in integer arithmetic.
#include <cstdint>
#include <climits>
#include <cstddef>

namespace ts::trace {

// Parses a JSON number in [p, end) (sign, digits, fraction, exponent) and returns it scaled by
// 10^scale, rounded half away from zero, in `out`. Returns false if the text is not a number or
// the result does not fit in int64. Digits past the 19th significant one are ignored.
bool decimal_to_scaled_int(const char* p, const char* end, int scale, int64_t& out);

// Fast path for the common shapes ("1623142623531639", "4.928", "-12"): plain digits with at
// most 3 fraction digits; anything else goes to the general routine.
inline bool decimal_to_scaled_int_fast(const char* p, const char* end, int scale, int64_t& out) {
  const char* q = p;
  bool neg = q < end && *q == '-';
  q += neg;
  const char* ds = q;
  uint64_t ip = 0;
  while (q < end && static_cast<unsigned>(*q - '0') < 10) ip = ip * 10 + static_cast<unsigned>(*q++ - '0');
  std::size_t nint = static_cast<std::size_t>(q - ds);
  if (nint == 0 || nint > 16 || scale < 0 || scale > 3) return decimal_to_scaled_int(p, end, scale, out);
  uint64_t frac = 0;
  int nf = 0;
  if (q < end && *q == '.') {
    ++q;
    while (q < end && nf < scale && static_cast<unsigned>(*q - '0') < 10) {
      frac = frac * 10 + static_cast<unsigned>(*q++ - '0');
      ++nf;
    }
    if (nf == 0 || (q < end && static_cast<unsigned>(*q - '0') < 10)) return decimal_to_scaled_int(p, end, scale, out);
  }
  if (q != end) return decimal_to_scaled_int(p, end, scale, out);
  static constexpr uint64_t pow10[4] = {1, 10, 100, 1000};
  uint64_t v = ip * pow10[scale] + frac * pow10[scale - nf];  // < 10^19: no wrap
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// Microseconds text -> nanoseconds.
inline bool micros_text_to_ns(const char* p, const char* end, int64_t& out) {
  return decimal_to_scaled_int_fast(p, end, 3, out);
}

}  // namespace ts::trace
