#pragma once
// Byte-level scanning loops for the trace parser. Every loop stops at a zero byte, which the
// parser keeps after the end of its window, so the loops need no bounds checks; callers tell
// "end of window" from "NUL in the data" by position. The quote search reads up to 15 bytes
// past `end`: the window has zeroed padding there.
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ts::trace::detail {

struct ByteClass {
  bool ws[256] = {};
  bool structural[256] = {};  // " [ ] { } and the NUL sentinel
  bool number[256] = {};      // characters that may appear in a JSON number
  constexpr ByteClass() {
    ws[' '] = ws['\n'] = ws['\r'] = ws['\t'] = true;
    for (char c : {'"', '[', ']', '{', '}', '\0'}) structural[static_cast<unsigned char>(c)] = true;
    for (char c = '0'; c <= '9'; ++c) number[static_cast<unsigned char>(c)] = true;
    for (char c : {'-', '+', '.', 'e', 'E'}) number[static_cast<unsigned char>(c)] = true;
  }
};
inline constexpr ByteClass kBytes{};

inline bool is_digit(char c) { return static_cast<unsigned>(c - '0') < 10; }
inline bool is_number_start(char c) { return is_digit(c) || c == '-'; }

inline const char* skip_ws(const char* p) {
  while (kBytes.ws[static_cast<unsigned char>(*p)]) ++p;
  return p;
}
inline const char* scan_structural(const char* p) {
  while (!kBytes.structural[static_cast<unsigned char>(*p)]) ++p;
  return p;
}
inline const char* scan_number(const char* p) {
  while (kBytes.number[static_cast<unsigned char>(*p)]) ++p;
  return p;
}
inline const char* scan_digits(const char* p, const char* end) {
  while (p < end && is_digit(*p)) ++p;
  return p;
}

// First '"' or '\\' in [p, end), or end.
inline const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i bslash = _mm_set1_epi8('\\');
  while (p < end) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    unsigned m = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash))));
    if (m) {
      const char* q = p + __builtin_ctz(m);
      return q < end ? q : end;
    }
    p += 16;
  }
  return end;
#else
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
#endif
}

}  // namespace ts::trace::detail
