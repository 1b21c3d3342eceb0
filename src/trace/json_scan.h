#pragma once
// Byte-level scanning loops for the trace parser. Every loop stops at a zero byte, which the
// parser keeps after the end of its window, so the loops need no bounds checks; callers tell
// "end of window" from "NUL in the data" by position. The quote search reads up to 15 bytes
// past `end`: the window has zeroed padding there.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ts::trace::detail {

struct ByteClass {
  bool ws[256] = {};
  bool structural[256] = {};  // " [ ] { } and the NUL sentinel
  bool number[256] = {};      // characters that may appear in a JSON number
  bool string_stop[256] = {}; // '"', '\\' and the NUL sentinel
  constexpr ByteClass() {
    for (char c : {' ', '\n', '\r', '\t'}) ws[static_cast<unsigned char>(c)] = true;
    for (char c : {'"', '[', ']', '{', '}', '\0'}) structural[static_cast<unsigned char>(c)] = true;
    for (char c = '0'; c <= '9'; ++c) number[static_cast<unsigned char>(c)] = true;
    for (char c : {'-', '+', '.', 'e', 'E'}) number[static_cast<unsigned char>(c)] = true;
    for (char c : {'"', '\\', '\0'}) string_stop[static_cast<unsigned char>(c)] = true;
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

// SWAR digit parsing (8 ASCII digits per step), as in simdjson/fast_float.
inline uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
// 1-7 bytes (n > 0) as one word, without reading past them: two overlapping 4-byte loads, or
// the first, middle and last bytes. Two ranges of one length are equal iff their words are.
inline uint64_t load_short(const char* p, size_t n) {
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    return lo | (static_cast<uint64_t>(hi) << 32);
  }
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])); };
  return (byte(0) << 16) | (byte(n >> 1) << 8) | byte(n - 1);
}
// Nonzero bits in the bytes of v that are not ASCII digits (a byte's +6 may carry into the next
// one only past a non-digit, so the first non-digit byte is always right).
inline uint64_t non_digits(uint64_t v) {
  return ((v & 0xF0F0F0F0F0F0F0F0ull) | (((v + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ^
         0x3333333333333333ull;
}
inline bool is_eight_digits(uint64_t v) { return non_digits(v) == 0; }
inline uint32_t parse_eight_digits(uint64_t v) {
  v = (v & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
  v = (v & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
  return static_cast<uint32_t>((v & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32);
}

// Parses the common number shapes in place: up to 16 integer digits and at most `scale`
// (<= 3) fraction digits, scaled by 10^scale. Returns the end of the number, or nullptr when
// the text needs the general routine (exponent, more digits, or not a number at all).
// Reads up to 8 bytes past the number: the caller guarantees padding.
[[gnu::always_inline]] inline const char* parse_scaled_fast(const char* p, int scale, int64_t& out) {
  const char* q = p;
  bool neg = *q == '-';
  q += neg;
  const char* ds = q;
  uint64_t ip = 0;
  uint64_t w = load8(q);
  if (const uint64_t nd = non_digits(w)) {
    // Fewer than 8 digits (most numbers in a trace): shifted to the top of the word, below
    // them zero bytes read as leading zeros.
    const int n = __builtin_ctzll(nd) >> 3;
    if (n == 0) return nullptr;
    ip = parse_eight_digits(w << (64 - 8 * n));
    q += n;
  } else {
    ip = parse_eight_digits(w);
    q += 8;
    w = load8(q);
    if (is_eight_digits(w)) {
      ip = ip * 100000000ull + parse_eight_digits(w);
      q += 8;
    }
    while (is_digit(*q)) ip = ip * 10 + static_cast<unsigned>(*q++ - '0');
  }
  size_t nint = static_cast<size_t>(q - ds);
  if (nint == 0 || nint > 16) return nullptr;
  uint64_t frac = 0;
  int nf = 0;
  if (*q == '.') {
    ++q;
    while (nf < scale && is_digit(*q)) {
      frac = frac * 10 + static_cast<unsigned>(*q++ - '0');
      ++nf;
    }
    if (nf == 0) return nullptr;
  }
  if (kBytes.number[static_cast<unsigned char>(*q)]) return nullptr;  // more digits, exponent...
  static constexpr uint64_t pow10[4] = {1, 10, 100, 1000};
  uint64_t v = ip * pow10[scale] + frac * pow10[scale - nf];  // < 10^19: no wrap
  if (v > 0x7FFFFFFFFFFFFFFFull) return nullptr;
  out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return q;
}

// Bit i set where an odd number of bits at or below i are set in x (a running XOR).
inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#if defined(__SSE2__)
// One 64-byte block's quotes, stops (a backslash or a NUL: where the byte-by-byte path must
// take over), opening and closing brackets as bit masks (bit i: byte i): what a 64-byte scan
// needs (find_plain_close here, the bracket count of written_whole.cpp).
struct BlockBits {
  uint64_t quote = 0, stop = 0, open = 0, close = 0;
};
inline BlockBits block_bits(const char* p) {
  BlockBits b;
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));  // '[' -> '{', ']' -> '}'
    const unsigned sh = 16u * static_cast<unsigned>(i);
    auto bits = [sh](__m128i m) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))) << sh; };
    b.quote |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    b.stop |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')), _mm_cmpeq_epi8(v, _mm_setzero_si128())));
    b.open |= bits(_mm_cmpeq_epi8(lower, _mm_set1_epi8('{')));
    b.close |= bits(_mm_cmpeq_epi8(lower, _mm_set1_epi8('}')));
  }
  return b;
}
#endif

// The first '}' outside strings at or after p, 64 bytes at a time, where nothing before it
// needs the byte-by-byte skip: returns nullptr at a '{', '[' or ']' outside strings, at a
// backslash or a NUL anywhere, or when fewer than 64 bytes are left before `end`. Strings are
// then plain quote pairs, so the bytes inside them are those after an odd number of quotes
// (a running XOR of the quote bits). For the rest of an object that is skipped whole (a flow
// event after its "ph"), it gives the '}' that the bracket-matching skip would reach.
inline const char* find_plain_close(const char* p, const char* end) {
#if defined(__SSE2__)
  uint64_t inside = 0;  // all ones when the previous block ended inside a string
  while (end - p >= 64) {
    const BlockBits b = block_bits(p);
    const uint64_t in_string = prefix_xor(b.quote) ^ inside;
    inside = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    const uint64_t outside = ~in_string;
    const uint64_t first = b.stop | ((b.open | b.close) & outside);
    if (first) {
      const uint64_t bit = first & (0 - first);
      if ((bit & b.close & outside) && p[__builtin_ctzll(bit)] == '}') return p + __builtin_ctzll(bit);
      return nullptr;
    }
    p += 64;
  }
#else
  (void)p, (void)end;
#endif
  return nullptr;
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
