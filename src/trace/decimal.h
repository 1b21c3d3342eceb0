#pragma once
// Exact decimal-text to integer conversion for trace numbers.
//
// Trace timestamps are microseconds written as text ("1712195495505582.988"). A double holds
// only ~15.9 significant digits, so a 16-digit epoch value loses its nanoseconds if parsed as
// one. These functions read the digits into an integer and scale in integer arithmetic.
#include <cstdint>

namespace ts::trace {

// Parses a JSON number in [p, end) (sign, digits, fraction, exponent) and returns it scaled by
// 10^scale, rounded half away from zero, in `out`. Returns false if the text is not a number or
// the result does not fit in int64. Digits past the 19th significant one are ignored.
bool decimal_to_scaled_int(const char* p, const char* end, int scale, int64_t& out);

// Microseconds text -> nanoseconds.
inline bool micros_text_to_ns(const char* p, const char* end, int64_t& out) {
  return decimal_to_scaled_int(p, end, 3, out);
}

}  // namespace ts::trace
