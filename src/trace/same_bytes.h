#pragma once
// Equality of two short byte ranges without a call into the C library: the reader compares an
// event's name and category with interned strings for every event, and those are 5-60 bytes,
// where memcmp's call and size dispatch cost more than the compare. Overlapping 8-byte loads
// cover any length from 8 up without reading past either range.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "trace/json_scan.h"

namespace ts::trace {

inline bool same_bytes(const char* a, const char* b, size_t n) {
  using detail::load8;
  if (n < 8) {
    if (n >= 4) {
      uint32_t x0, y0, x1, y1;
      std::memcpy(&x0, a, 4), std::memcpy(&y0, b, 4);
      std::memcpy(&x1, a + n - 4, 4), std::memcpy(&y1, b + n - 4, 4);
      return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    for (size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  uint64_t diff = 0;
  size_t i = 0;
  for (; i + 8 < n; i += 8) diff |= load8(a + i) ^ load8(b + i);
  return (diff | (load8(a + n - 8) ^ load8(b + n - 8))) == 0;
}

}  // namespace ts::trace
