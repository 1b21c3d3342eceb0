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
  if (n < 8) return n == 0 || detail::load_short(a, n) == detail::load_short(b, n);
  uint64_t diff = 0;
  size_t i = 0;
  for (; i + 8 < n; i += 8) diff |= load8(a + i) ^ load8(b + i);
  return (diff | (load8(a + n - 8) ^ load8(b + n - 8))) == 0;
}

}  // namespace ts::trace
