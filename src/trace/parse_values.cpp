#include "trace/parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "trace/decimal.h"
#include "trace/json_scan.h"
#include "util/error.h"

namespace ts::trace::detail {

static void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

static int hex4(const char* p) {
  int v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

const char* Parser::decode_string(const char* p, std::string_view& out) {
  scratch_.clear();
  const char* s = p + 1;
  for (;;) {
    const char* q = find_quote_or_backslash(s, end_);
    if (q == end_) more("a closing '\"'");
    scratch_.append(s, static_cast<size_t>(q - s));
    if (*q == '"') {
      out = scratch_;
      return q + 1;
    }
    // Backslash escape.
    if (end_ - q < 2) more("an escape sequence");
    char e = q[1];
    s = q + 2;
    switch (e) {
      case '"': scratch_ += '"'; break;
      case '\\': scratch_ += '\\'; break;
      case '/': scratch_ += '/'; break;
      case 'b': scratch_ += '\b'; break;
      case 'f': scratch_ += '\f'; break;
      case 'n': scratch_ += '\n'; break;
      case 'r': scratch_ += '\r'; break;
      case 't': scratch_ += '\t'; break;
      case 'u': {
        if (end_ - q < 6) more("four hex digits after \\u");
        int cp = hex4(q + 2);
        if (cp < 0) fail(q, "four hex digits after \\u");
        s = q + 6;
        if (cp >= 0xD800 && cp < 0xDC00) {
          // A high surrogate should be followed by \uDC00-\uDFFF; a lone one becomes U+FFFD.
          if (end_ - s < 6) more("a low surrogate");
          int lo = (s[0] == '\\' && s[1] == 'u') ? hex4(s + 2) : -1;
          if (lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            s += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        append_utf8(scratch_, static_cast<uint32_t>(cp));
        break;
      }
      default: fail(q, "a valid escape sequence (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
  }
}

const char* Parser::skip_string(const char* p) const {
  const char* s = p + 1;
  for (;;) {
    const char* q = find_quote_or_backslash(s, end_);
    if (q == end_) more("a closing '\"'");
    if (*q == '"') return q + 1;
    if (end_ - q < 2) more("an escape sequence");
    s = q + 2;  // whatever is escaped, it is not the end of the string
  }
}

// ---------------------------------------------------------------- generic values

const char* Parser::skip_literal(const char* p) const {
  static constexpr std::string_view lits[] = {"true", "false", "null"};
  for (std::string_view lit : lits) {
    if (*p != lit[0]) continue;
    size_t avail = static_cast<size_t>(end_ - p);
    size_t n = std::min(avail, lit.size());
    if (std::memcmp(p, lit.data(), n) != 0) fail(p, "a JSON value");
    if (n < lit.size()) more("a JSON value");
    return p + lit.size();
  }
  unexpected(p, "a JSON value");
}

const char* Parser::skip_value(const char* p) {
  // p at the first character of a value (whitespace already skipped).
  char c = *p;
  if (c == '"') return skip_string(p);
  if (c == '{' || c == '[') {
    char stack[kMaxDepth];
    return skip_nested(p, stack, 0);  // opens the container at p itself
  }
  if (is_number_start(c)) {
    const char* q = number_end(p);
    if (q == p + 1 && c == '-') fail(p, "a number");
    return q;
  }
  return skip_literal(p);
}

const char* Parser::skip_nested(const char* p, char* stack, int depth) {
  // Containers are skipped by matching brackets (strings skipped whole); their contents are not
  // validated further. The stack (depth entries open) checks that ']' closes '[' and '}' closes '{'.
  for (;;) {
    p = scan_structural(p);
    switch (*p) {
      case '"': p = skip_string(p); break;
      case '{':
      case '[':
        if (depth + depth_ >= kMaxDepth) fail(p, "nesting shallower than " + std::to_string(kMaxDepth) + " levels");
        stack[depth++] = *p == '{' ? '}' : ']';
        ++p;
        break;
      case '}':
      case ']':
        if (*p != stack[depth - 1]) fail(p, std::string("'") + stack[depth - 1] + "' to close the value");
        ++p;
        if (--depth == 0) return p;
        break;
      default:  // NUL: the sentinel or a NUL byte in the data
        if (p >= end_) more("the end of a JSON value");
        fail(p, "JSON text, not a NUL byte");
    }
  }
}

const char* Parser::skip_rest_of_object(const char* p) {
  // Just after a member's value: the '}' that closes the object, found as skipping a container
  // from inside it would (the members' syntax is not checked further).
  if (const char* close = find_plain_close(p, end_)) [[likely]] return close;
  char stack[kMaxDepth];
  stack[0] = '}';
  return skip_nested(p, stack, 1) - 1;
}

const char* Parser::read_scaled_slow(const char* p, int scale, int64_t& out, bool& ok) {
  // Not the fast path's shape, or a number that touches the window's end (re-read after a refill).
  ok = false;
  const char* b;
  const char* e;
  const char* after;
  if (*p == '"') {
    std::string_view s;
    after = read_string(p, s);
    if (s.empty()) return after;
    b = s.data();
    e = s.data() + s.size();
  } else if (is_number_start(*p)) {
    b = p;
    e = after = number_end(p);
  } else {
    return skip_value(p);  // null, true, an object...: not a number, ignored
  }
  ok = decimal_to_scaled_int_fast(b, e, scale, out);
  return after;
}

void Parser::bad_time(const char* p, const char* field) const {
  fail(p, std::string("a number of microseconds for \"") + field + "\" (within +-292 years)");
}

// Clinger's fast path for the args a kernel writes ("blocks per SM": 12.800000): digits with at
// most one '.', digits on both sides, 15 digits at most and no exponent. The digits are then an
// exact double and so is the power of ten, and one division rounds correctly: the double
// from_chars gives. False for any other text (from_chars reads it).
static bool exact_decimal(const char* b, const char* e, double& v) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const bool neg = b < e && *b == '-';
  const char* q = b + neg;
  uint64_t m = 0;
  int digits = 0, frac = -1;  // frac: digits after the '.', -1 before it
  for (; q < e; ++q) {
    if (is_digit(*q)) {
      m = m * 10 + static_cast<unsigned>(*q - '0');
      ++digits;
      frac += frac >= 0;
    } else if (*q == '.' && frac < 0 && digits > 0) {
      frac = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 15 || frac == 0) return false;
  v = static_cast<double>(m) / kPow10[frac < 0 ? 0 : frac];
  if (neg) v = -v;
  return true;
}

const char* Parser::read_float(const char* p, float& out) {
  const char* b;
  const char* e;
  const char* after;
  if (*p == '"') {
    std::string_view s;
    after = read_string(p, s);
    b = s.data();
    e = s.data() + s.size();
  } else if (is_number_start(*p)) {
    b = p;
    e = after = number_end(p);
  } else {
    return skip_value(p);
  }
  double v;
  if (!exact_decimal(b, e, v)) {
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e) return after;
  }
  // Out-of-range doubles would be undefined behaviour as float: clamp (NaN is never produced).
  out = static_cast<float>(std::clamp(v, -3.0e38, 3.0e38));
  return after;
}

const char* Parser::read_int3(const char* p, int32_t out[3]) {
  if (*p != '[') return skip_value(p);
  int i = 0;
  ++depth_;
  p = for_each_element(p, "an array of numbers", [&](const char* q) {
    if (i < 3) return read_int_as(q, out[i++]);
    return skip_value(q);
  });
  --depth_;
  return p;
}

const char* Parser::read_raw_interned(const char* p, uint32_t& out) {
  const char* e = skip_value(p);
  out = store_.strings.intern(std::string_view(p, static_cast<size_t>(e - p)));
  return e;
}

const char* Parser::read_interned(const char* p, uint32_t& out) {
  if (*p != '"') return read_raw_interned(p, out);  // e.g. a list of ranks written as an array
  std::string_view s;
  p = read_string(p, s);
  out = store_.strings.intern(s);
  return p;
}

const char* Parser::read_id_string(const char* p, int64_t& out) {
  // pid/tid: a number, a numeric string ("25738"), or a name ("CPU functions", "stream 7").
  std::string_view s;
  const char* after = read_short_string(p, s);
  int64_t v;
  if (!s.empty() && s.size() <= 19 && (is_digit(s[0]) || s[0] == '-') &&
      scan_digits(s.data() + (s[0] == '-'), s.data() + s.size()) == s.data() + s.size() &&
      decimal_to_scaled_int(s.data(), s.data() + s.size(), 0, v)) {
    out = v;
  } else {
    out = EventStore::named_id(store_.strings.intern(s));
  }
  return after;
}

void Parser::bad_id(const char* p) const { fail(p, "a number or string for pid/tid"); }


}  // namespace ts::trace::detail
