#include "trace/trace_parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

#include <sys/mman.h>

#include "trace/decimal.h"
#include "trace/json_scan.h"
#include "util/error.h"

namespace ts::trace::detail {
namespace {

struct NeedMore {};  // the current item runs past the window: refill and parse it again

constexpr size_t kPad = 64;  // zeroed bytes after the data: a sentinel for the scanning loops

// One event while it is being parsed; committed to the store only once its '}' is seen,
// so an item parsed twice (after a refill) is never stored twice.
struct PendingEvent {
  uint32_t name = kNoString;
  Category cat = Category::Unknown;
  Phase ph = Phase::Other;
  bool has_ph = false, has_args = false;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0;
  int64_t corr = kNone, ext = kNone, flow_id = kNone;
  uint32_t dims = kNoString, types = kNoString, meta_name = kNoString;
  EventArgs a;
};

class Parser {
 public:
  Parser(ByteSource& src, const std::string& origin, const ReadOptions& opt, size_t window)
      : src_(src), origin_(origin), opt_(opt), cap_(std::max<size_t>(window, 16)) {
    std::string_view whole = src_.map_whole();
    if (!whole.empty()) {
      // Parse the mapped file in place: the window is the whole file and no refill happens.
      data_ = mark_ = whole.data();
      end_ = data_ + whole.size();
      eof_ = true;
      next_release_ = data_ + kReleaseStep;
    } else {
      // Memory (and plain files of known size) need no window larger than themselves.
      if (!src_.compressed() && src_.raw_size() > 0 && src_.raw_size() < cap_)
        cap_ = std::max<size_t>(static_cast<size_t>(src_.raw_size()) + 1, 16);
      buf_.reset(new char[cap_ + kPad]);
      data_ = end_ = mark_ = buf_.get();
      std::memset(buf_.get(), 0, kPad);
    }
    memory_id_ = store_.strings.intern("[memory]");
    process_name_id_ = store_.strings.intern("process_name");
    thread_name_id_ = store_.strings.intern("thread_name");
    // Reserve the columns from the file size (~250 bytes of JSON per event, gzip ~10x): growing
    // by doubling would copy every column and touch twice the memory. Unused reservation is
    // only address space, never resident.
    uint64_t expect_bytes = src_.raw_size() * (src_.compressed() ? 10 : 1);
    uint64_t expect_events = std::min<uint64_t>(expect_bytes / 250 + 1024, uint64_t(1) << 27);
    if (opt_.max_events) expect_events = std::min<uint64_t>(expect_events, opt_.max_events);
    store_.reserve(static_cast<size_t>(expect_events));
    store_.args_table.reserve(static_cast<size_t>(expect_events / 4));
    advise_huge_pages();
  }

  EventStore run();

  // Large columns: ask for transparent huge pages (Linux "madvise" mode), so filling them
  // costs one fault per 2 MiB instead of per 4 KiB.
  void advise_huge_pages() {
    auto advise = [](const void* data, size_t bytes) {
      constexpr uintptr_t kHuge = 2u << 20;
      if (bytes < 2 * kHuge) return;
      uintptr_t b = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
      uintptr_t e = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
      if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
    };
    EventStore& s = store_;
    size_t n = s.name.capacity();
    advise(s.name.data(), n * sizeof(uint32_t));
    advise(s.cat.data(), n);
    advise(s.ph.data(), n);
    for (auto* col : {&s.pid, &s.tid, &s.ts_ns, &s.dur_ns, &s.correlation, &s.external_id})
      advise(col->data(), col->capacity() * sizeof(int64_t));
    for (auto* col : {&s.args, &s.input_dims, &s.input_types}) advise(col->data(), col->capacity() * sizeof(uint32_t));
    advise(s.args_table.data(), s.args_table.capacity() * sizeof(EventArgs));
  }

 private:
  enum class State { Start, ObjFirst, ObjKey, ObjNext, EvFirst, EvNext, End, Done };

  // ---- window ----
  void refill();
  uint64_t offset(const char* p) const { return base_ + static_cast<uint64_t>(p - data_); }
  // Mapped input: every kReleaseStep bytes, let go of what is parsed and report progress.
  [[gnu::noinline]] void mapped_progress(const char* p) {
    src_.release_before(p);
    next_release_ = p + kReleaseStep;
    uint64_t done = offset(p);
    if (opt_.progress) opt_.progress(done, done, src_.raw_size());
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const char* p, const std::string& what) const;
  // Called when a scan hits the end of the window: refill, or report the truncation.
  [[noreturn, gnu::cold, gnu::noinline]] void more(const char* what) const {
    if (!eof_) throw NeedMore{};
    fail(end_, what);
  }
  // At a character that is not what the grammar needs: truncated or wrong.
  [[noreturn, gnu::cold, gnu::noinline]] void unexpected(const char* p, const char* what) const {
    if (p >= end_) more(what);
    fail(p, what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void unexpected_in(const char* p, const char* expected, const char* what) const {
    unexpected(p, std::string(expected).append(what).c_str());
  }
  const char* expect(const char* p, char c, const char* what) const {
    if (*p != c) unexpected(p, what);
    return p + 1;
  }

  // ---- JSON values ----
  inline const char* read_string(const char* p, std::string_view& out);
  // Keys, "ph", "cat", pid/tid names: short, and in the same order event after event. A plain
  // byte loop, whose branches the predictor learns, beats the SIMD search here (the next load
  // would wait on the SIMD result).
  const char* read_short_string(const char* p, std::string_view& out) {
    const char* q = p + 1;
    while (!kBytes.string_stop[static_cast<unsigned char>(*q)]) ++q;
    if (*q == '"') {
      out = std::string_view(p + 1, static_cast<size_t>(q - p - 1));
      return q + 1;
    }
    return read_string(p, out);
  }
  [[gnu::noinline]] const char* decode_string(const char* p, std::string_view& out);
  const char* skip_string(const char* p) const;
  const char* skip_value(const char* p);
  const char* skip_literal(const char* p) const;
  const char* number_end(const char* p) const {
    const char* q = scan_number(p);
    if (q == end_ && !eof_) throw NeedMore{};
    return q;
  }
  // Number (or numeric string) scaled by 10^scale into `out`; false if absent/not numeric.
  const char* read_scaled(const char* p, int scale, int64_t& out, bool& ok);
  const char* read_int(const char* p, int64_t& out) {
    bool ok;
    int64_t v;
    p = read_scaled(p, 0, v, ok);
    if (ok) out = v;
    return p;
  }
  template <class T>
  const char* read_int_as(const char* p, T& out) {
    int64_t v = 0;
    bool ok;
    p = read_scaled(p, 0, v, ok);
    if (ok) out = static_cast<T>(v);
    return p;
  }
  const char* read_float(const char* p, float& out);
  const char* read_int3(const char* p, int32_t out[3]);
  const char* read_raw_interned(const char* p, uint32_t& out);
  const char* read_time(const char* p, int64_t& out, const char* field);
  const char* read_id(const char* p, int64_t& out);
  template <class F>
  const char* for_each_member(const char* p, const char* what, F&& on_member);
  template <class F>
  const char* for_each_element(const char* p, const char* what, F&& on_element);

  // ---- trace structure ----
  const char* parse_event(const char* p);
  const char* parse_event_args(const char* p, PendingEvent& ev);
  void commit(const PendingEvent& ev, const char* p);
  Category category_of(std::string_view cat);
  const char* parse_top_value(const char* p, std::string_view key);
  const char* parse_device(const char* p);

  ByteSource& src_;
  const std::string& origin_;
  const ReadOptions& opt_;
  size_t cap_;
  static constexpr size_t kReleaseStep = 16u << 20;
  std::unique_ptr<char[]> buf_;  // the read() window (null when the file is mapped)
  const char* data_;  // start of the window: buf_, or the mapped file
  const char* end_;   // end of valid data in the window (a zero byte sits there)
  const char* next_release_ = reinterpret_cast<const char*>(UINTPTR_MAX);
  const char* mark_;  // start of the item being parsed
  uint64_t base_ = 0;  // uncompressed offset of buf_[0]
  bool eof_ = false;
  std::string scratch_;  // decoded strings with escapes
  int depth_ = 0;

  EventStore store_;
  bool bare_ = false, saw_trace_events_ = false, saw_2021_cats_ = false;
  uint32_t memory_id_, process_name_id_, thread_name_id_;
  struct CatEntry {
    std::string text;
    Category cat;
  };
  std::vector<CatEntry> cat_cache_;
};

void Parser::fail(const char* p, const std::string& what) const {
  std::string msg = origin_ + ": byte " + std::to_string(offset(p));
  if (src_.compressed()) msg += " (uncompressed)";
  msg += ": ";
  if (p >= end_ && eof_) msg += "unexpected end of file (truncated?), ";
  msg += "expected " + what;
  throw UserError(msg);
}

void Parser::refill() {
  size_t keep = static_cast<size_t>(end_ - mark_);
  if (keep * 2 > cap_) {
    // One item fills most of the window: grow it, within bounds.
    if (cap_ >= kMaxItemBytes)
      fail(mark_, "an event or top-level value shorter than " + std::to_string(kMaxItemBytes >> 20) + " MiB");
    size_t ncap = std::min(cap_ * 2, kMaxItemBytes);
    std::unique_ptr<char[]> nb(new char[ncap + kPad]);
    std::memcpy(nb.get(), mark_, keep);
    base_ += static_cast<uint64_t>(mark_ - data_);
    buf_ = std::move(nb);
    cap_ = ncap;
  } else {
    base_ += static_cast<uint64_t>(mark_ - data_);
    std::memmove(buf_.get(), mark_, keep);
  }
  size_t len = keep;
  while (len < cap_) {
    size_t n = src_.read(buf_.get() + len, cap_ - len);
    if (n == 0) {
      eof_ = true;
      break;
    }
    len += n;
  }
  data_ = mark_ = buf_.get();
  end_ = buf_.get() + len;
  std::memset(buf_.get() + len, 0, kPad);
  if (opt_.progress) opt_.progress(base_ + len, src_.raw_consumed(), src_.raw_size());
}

// ---------------------------------------------------------------- strings

inline const char* Parser::read_string(const char* p, std::string_view& out) {
  // p at the opening quote. Fast path: no escapes, one SIMD scan to the closing quote.
  const char* s = p + 1;
  const char* q = find_quote_or_backslash(s, end_);
  if (q == end_) more("a closing '\"'");
  if (*q == '"') {
    out = std::string_view(s, static_cast<size_t>(q - s));
    return q + 1;
  }
  return decode_string(p, out);
}

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
    // Containers are skipped by matching brackets (strings skipped whole); their contents
    // are not validated further. A small stack checks that ']' closes '[' and '}' closes '{'.
    char stack[kMaxDepth];
    int depth = 0;
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
  if (is_number_start(c)) {
    const char* q = number_end(p);
    if (q == p + 1 && c == '-') fail(p, "a number");
    return q;
  }
  return skip_literal(p);
}

const char* Parser::read_scaled(const char* p, int scale, int64_t& out, bool& ok) {
  if (is_number_start(*p)) {
    // Fast path in the window; a number that touches the window's end is re-read after a refill.
    const char* q = parse_scaled_fast(p, scale, out);
    if (q && (q < end_ || eof_)) {
      ok = true;
      return q;
    }
  }
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

const char* Parser::read_time(const char* p, int64_t& out, const char* field) {
  bool ok;
  const char* start = p;
  p = read_scaled(p, 3, out, ok);
  if (!ok && *start != 'n')  // null is allowed and means absent
    fail(start, std::string("a number of microseconds for \"") + field + "\" (within +-292 years)");
  return p;
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
  auto r = std::from_chars(b, e, v);
  // Out-of-range doubles would be undefined behaviour as float: clamp (NaN is never produced).
  if (r.ec == std::errc() && r.ptr == e) out = static_cast<float>(std::clamp(v, -3.0e38, 3.0e38));
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

const char* Parser::read_id(const char* p, int64_t& out) {
  // pid/tid: a number, a numeric string ("25738"), or a name ("CPU functions", "stream 7").
  if (*p == '"') {
    std::string_view s;
    const char* after = read_short_string(p, s);
    int64_t v;
    if (!s.empty() && s.size() <= 19 && (is_digit(s[0]) || s[0] == '-') &&
        scan_digits(s.data() + (s[0] == '-'), s.data() + s.size()) == s.data() + s.size() &&
        decimal_to_scaled_int(s.data(), s.data() + s.size(), 0, v)) {
      out = v;
    } else {
      out = -(1 + static_cast<int64_t>(store_.strings.intern(s)));
    }
    return after;
  }
  bool ok;
  int64_t v = 0;
  const char* start = p;
  p = read_scaled(p, 0, v, ok);
  if (!ok && *start != 'n') fail(start, "a number or string for pid/tid");
  out = ok ? v : 0;
  return p;
}

template <class F>
const char* Parser::for_each_member(const char* p, const char* what, F&& on_member) {
  // p at '{'. on_member(key, p_at_value) returns the pointer after the value.
  p = skip_ws(p + 1);
  if (*p == '}') return p + 1;
  for (;;) {
    if (*p != '"') unexpected_in(p, "a key string in ", what);
    std::string_view key;
    p = read_short_string(p, key);
    if (key.data() == scratch_.data()) {
      // Keys with escapes are rare; copy so a value's decoding cannot clobber it.
      static thread_local std::string key_copy;
      key_copy.assign(key);
      key = key_copy;
    }
    p = skip_ws(p);
    p = expect(p, ':', "':' after a key");
    p = skip_ws(p);
    p = on_member(key, p);
    p = skip_ws(p);
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    if (*p == '}') return p + 1;
    unexpected_in(p, "',' or '}' in ", what);
  }
}

template <class F>
const char* Parser::for_each_element(const char* p, const char* what, F&& on_element) {
  p = skip_ws(p + 1);
  if (*p == ']') return p + 1;
  for (;;) {
    p = on_element(p);
    p = skip_ws(p);
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    if (*p == ']') return p + 1;
    unexpected_in(p, "',' or ']' in ", what);
  }
}

// ---------------------------------------------------------------- events

#define KEY_IS(k, lit) (std::memcmp((k).data(), lit, sizeof(lit) - 1) == 0)

static Phase phase_of(std::string_view s) {
  if (s.size() != 1) return Phase::Other;
  switch (s[0]) {
    case 'X': return Phase::Complete;
    case 'i':
    case 'I': return Phase::Instant;
    case 'B': return Phase::Begin;
    case 'E': return Phase::End;
    case 'C': return Phase::Counter;
    case 's': return Phase::FlowStart;
    case 't': return Phase::FlowStep;
    case 'f': return Phase::FlowEnd;
    case 'M': return Phase::Metadata;
    default: return Phase::Other;
  }
}

Category Parser::category_of(std::string_view cat) {
  for (const auto& e : cat_cache_)
    if (e.text.size() == cat.size() && std::memcmp(e.text.data(), cat.data(), cat.size()) == 0) return e.cat;
  Category c = parse_category(cat);
  // The 2021 form spells its categories capitalised.
  if (cat == "Operator" || cat == "Runtime" || cat == "Kernel" || cat == "Memcpy" || cat == "Memset")
    saw_2021_cats_ = true;
  if (cat_cache_.size() < 64) cat_cache_.push_back({std::string(cat), c});
  return c;
}

const char* Parser::parse_event(const char* p) {
  if (*p != '{') unexpected(p, "an event object '{'");
  PendingEvent ev;
  std::string_view s;
  p = for_each_member(p, "an event", [&](std::string_view k, const char* v) -> const char* {
    switch (k.size()) {
      case 2:
        if (KEY_IS(k, "ph")) {
          if (*v != '"') unexpected(v, "a string for \"ph\"");
          v = read_short_string(v, s);
          ev.ph = phase_of(s);
          ev.has_ph = true;
          return v;
        }
        if (KEY_IS(k, "ts")) return read_time(v, ev.ts, "ts");
        if (KEY_IS(k, "id")) {
          int64_t id;
          bool ok;
          v = read_scaled(v, 0, id, ok);
          if (ok) ev.flow_id = id;
          return v;
        }
        break;
      case 3:
        if (KEY_IS(k, "cat")) {
          if (*v != '"') return skip_value(v);
          v = read_short_string(v, s);
          ev.cat = category_of(s);
          return v;
        }
        if (KEY_IS(k, "pid")) return read_id(v, ev.pid);
        if (KEY_IS(k, "tid")) return read_id(v, ev.tid);
        if (KEY_IS(k, "dur")) return read_time(v, ev.dur, "dur");
        break;
      case 4:
        if (KEY_IS(k, "name")) {
          if (*v != '"') return skip_value(v);
          v = read_string(v, s);
          ev.name = store_.strings.intern(s);
          return v;
        }
        if (KEY_IS(k, "args")) {
          if (*v != '{') return skip_value(v);
          return parse_event_args(v, ev);
        }
        break;
    }
    return skip_value(v);
  });
  commit(ev, p);
  return p;
}

const char* Parser::parse_event_args(const char* p, PendingEvent& ev) {
  ++depth_;
  EventArgs& a = ev.a;
  p = for_each_member(p, "event args", [&](std::string_view k, const char* v) -> const char* {
    switch (k.size()) {
      case 4:
        if (KEY_IS(k, "grid")) return ev.has_args = true, read_int3(v, a.grid);
        if (KEY_IS(k, "name") && *v == '"') {
          std::string_view s;
          v = read_string(v, s);
          ev.meta_name = store_.strings.intern(s);
          return v;
        }
        break;
      case 5:
        if (KEY_IS(k, "block")) return ev.has_args = true, read_int3(v, a.block);
        if (KEY_IS(k, "bytes") || KEY_IS(k, "Bytes")) return ev.has_args = true, read_int(v, a.bytes);
        break;
      case 6:
        if (KEY_IS(k, "device")) return ev.has_args = true, read_int_as(v, a.device_id);
        break;
      case 9:
        if (KEY_IS(k, "Device Id")) return ev.has_args = true, read_int_as(v, a.device_id);
        break;
      case 10:
        if (KEY_IS(k, "Input Dims")) return read_raw_interned(v, ev.dims);
        if (KEY_IS(k, "Input type")) return read_raw_interned(v, ev.types);
        break;
      case 11:
        if (KEY_IS(k, "correlation")) return read_int(v, ev.corr);
        if (KEY_IS(k, "External id") || KEY_IS(k, "external id")) return read_int(v, ev.ext);
        if (KEY_IS(k, "Device Type")) return ev.has_args = true, read_int_as(v, a.device_type);
        break;
      case 12:
        if (KEY_IS(k, "warps per SM")) return ev.has_args = true, read_float(v, a.warps_per_sm);
        break;
      case 13:
        if (KEY_IS(k, "shared memory")) return ev.has_args = true, read_int_as(v, a.shared_memory);
        if (KEY_IS(k, "blocks per SM")) return ev.has_args = true, read_float(v, a.blocks_per_sm);
        break;
      case 14:
        if (KEY_IS(k, "Total Reserved")) return ev.has_args = true, read_int(v, a.total_reserved);
        break;
      case 15:
        if (KEY_IS(k, "Total Allocated")) return ev.has_args = true, read_int(v, a.total_allocated);
        break;
      case 20:
        if (KEY_IS(k, "registers per thread")) return ev.has_args = true, read_int_as(v, a.registers_per_thread);
        break;
      case 23:
        if (KEY_IS(k, "memory bandwidth (GB/s)")) return ev.has_args = true, read_float(v, a.bandwidth_gbps);
        break;
      case 25:
        if (KEY_IS(k, "est. achieved occupancy %")) return ev.has_args = true, read_float(v, a.occupancy_pct);
        break;
    }
    return skip_value(v);
  });
  --depth_;
  return p;
}

void Parser::commit(const PendingEvent& ev, const char* p) {
  if (!ev.has_ph) return;  // not a trace event (Chrome's viewer ignores these too)
  if (opt_.max_events && store_.size() >= opt_.max_events)
    fail(p, "at most " + std::to_string(opt_.max_events) + " events (the reader's limit)");
  Category c = ev.cat;
  if (ev.name == memory_id_) {
    c = Category::Memory;
  } else if (c == Category::Unknown && bare_ && ev.ph == Phase::Complete) {
    c = Category::CpuOp;  // the bare-array form records only operators and record_function ranges
  } else if (c == Category::CudaRuntime && !store_.meta.is_rocm) {
    std::string_view n = store_.strings.view(ev.name);
    if (n.size() > 3 && n.compare(0, 3, "hip") == 0) store_.meta.is_rocm = true;
  }
  uint32_t args_idx = kNoArgs;
  if (ev.has_args && (c == Category::Kernel || c == Category::GpuMemcpy || c == Category::GpuMemset ||
                      c == Category::Memory))
    args_idx = store_.add_args(ev.a);
  int64_t corr = ev.corr;
  if ((ev.ph == Phase::FlowStart || ev.ph == Phase::FlowStep || ev.ph == Phase::FlowEnd) && ev.flow_id != kNone)
    corr = ev.flow_id;
  if (ev.ph == Phase::Metadata) {
    if (ev.name == process_name_id_) store_.process_names.push_back({ev.pid, kNone, ev.meta_name});
    if (ev.name == thread_name_id_) store_.thread_names.push_back({ev.pid, ev.tid, ev.meta_name});
  }
  int64_t dur = (ev.ph == Phase::Complete) ? ev.dur : 0;
  store_.add(ev.name, c, ev.ph, ev.pid, ev.tid, ev.ts, dur, corr, ev.ext, args_idx, ev.dims, ev.types);
}

// ---------------------------------------------------------------- top level

static bool contains_amd(std::string_view n) {
  return n.find("AMD") != std::string_view::npos || n.find("Radeon") != std::string_view::npos ||
         n.find("Instinct") != std::string_view::npos;
}

const char* Parser::parse_device(const char* p) {
  if (*p != '{') return skip_value(p);
  DeviceProperties d;
  ++depth_;
  p = for_each_member(p, "deviceProperties", [&](std::string_view k, const char* v) -> const char* {
    if (k == "id") return read_int_as(v, d.id);
    if (k == "name" && *v == '"') {
      std::string_view s;
      v = read_string(v, s);
      d.name.assign(s);
      return v;
    }
    if (k == "totalGlobalMem") return read_int(v, d.total_global_mem);
    if (k == "computeMajor") return read_int_as(v, d.compute_major);
    if (k == "computeMinor") return read_int_as(v, d.compute_minor);
    if (k == "numSms") return read_int_as(v, d.num_sms);
    if (k == "maxThreadsPerMultiprocessor") return read_int_as(v, d.max_threads_per_sm);
    if (k == "warpSize") return read_int_as(v, d.warp_size);
    return skip_value(v);
  });
  --depth_;
  if (contains_amd(d.name)) store_.meta.is_rocm = true;
  store_.meta.devices.push_back(std::move(d));
  return p;
}

const char* Parser::parse_top_value(const char* p, std::string_view key) {
  TraceMeta& m = store_.meta;
  auto raw_text = [&](const char* v, std::string& out) {
    if (*v == '"') {
      std::string_view s;
      v = read_string(v, s);
      out.assign(s);
      return v;
    }
    const char* e = skip_value(v);
    out.assign(v, static_cast<size_t>(e - v));
    return e;
  };
  auto read_flag = [&](const char* v, bool& out) {
    if (*v == 't' || *v == 'f') {
      out = *v == 't';
      return skip_value(v);
    }
    int64_t x = 0;
    v = read_int(v, x);
    out = x != 0;
    return v;
  };
  if (key == "schemaVersion") return read_int_as(p, m.schema_version);
  if (key == "baseTimeNanoseconds") return read_int(p, m.base_time_ns);
  if (key == "record_shapes") return read_flag(p, m.record_shapes);
  if (key == "profile_memory") return read_flag(p, m.profile_memory);
  if (key == "cuda_runtime_version") return raw_text(p, m.cuda_runtime_version);
  if (key == "cuda_driver_version") return raw_text(p, m.cuda_driver_version);
  if (key == "cupti_version") return raw_text(p, m.cupti_version);
  if (key == "deviceProperties" && *p == '[') {
    // Parsed into a copy first: an item may be parsed twice after a refill.
    std::vector<DeviceProperties> saved = m.devices;
    bool rocm = m.is_rocm;
    try {
      return for_each_element(p, "deviceProperties", [&](const char* v) { return parse_device(v); });
    } catch (NeedMore&) {
      m.devices = std::move(saved);
      m.is_rocm = rocm;
      throw;
    }
  }
  if (key == "distributedInfo" && *p == '{') {
    DistributedInfo d;
    d.present = true;
    p = for_each_member(p, "distributedInfo", [&](std::string_view k, const char* v) -> const char* {
      if (k == "backend") return raw_text(v, d.backend);
      if (k == "rank") return read_int_as(v, d.rank);
      if (k == "world_size") return read_int_as(v, d.world_size);
      return skip_value(v);
    });
    m.distributed = std::move(d);
    return p;
  }
  return skip_value(p);
}

EventStore Parser::run() {
  State state = State::Start;
  while (state != State::Done) {
    try {
      const char* p = mark_;
      for (;;) {
        switch (state) {
          case State::Start:
            p = skip_ws(p);
            if (p == end_) {
              if (!eof_) throw NeedMore{};
              if (offset(p) == 0) throw UserError(origin_ + ": byte 0: expected a JSON trace, but the file is empty");
              fail(p, "a JSON trace, but the file holds only whitespace");
            }
            if (*p == '{') {
              state = State::ObjFirst;
            } else if (*p == '[') {
              bare_ = true;
              state = State::EvFirst;
            } else {
              fail(p, "'{' or '[' at the start of a PyTorch profiler trace (this is not JSON)");
            }
            mark_ = ++p;
            break;
          case State::ObjFirst:
            p = skip_ws(p);
            if (*p == '}') {
              mark_ = ++p;
              state = State::End;
              break;
            }
            state = State::ObjKey;
            mark_ = p;
            break;
          case State::ObjKey: {
            p = skip_ws(p);
            if (*p != '"') unexpected(p, "a key string in the top-level object");
            std::string_view key;
            p = read_string(p, key);
            std::string k(key);
            p = skip_ws(p);
            p = expect(p, ':', "':' after a key");
            p = skip_ws(p);
            if (k == "traceEvents") {
              if (*p != '[') unexpected(p, "'[' to open traceEvents");
              saw_trace_events_ = true;
              ++p;
              state = State::EvFirst;
            } else {
              p = parse_top_value(p, k);
              state = State::ObjNext;
            }
            mark_ = p;
            break;
          }
          case State::ObjNext:
            if (p >= next_release_) mapped_progress(p);  // after a large top-level value
            p = skip_ws(p);
            if (*p == ',') {
              p = skip_ws(p + 1);
              state = State::ObjKey;
              mark_ = p;
              break;
            }
            if (*p == '}') {
              mark_ = ++p;
              state = State::End;
              break;
            }
            unexpected(p, "',' or '}' in the top-level object");
          case State::EvFirst:
            p = skip_ws(p);
            if (*p == ']') {
              mark_ = ++p;
              state = bare_ ? State::End : State::ObjNext;
              break;
            }
            mark_ = p = parse_event(p);
            state = State::EvNext;
            break;
          case State::EvNext:
            // The hot loop: one event per iteration.
            for (;;) {
              p = skip_ws(p);
              if (*p == ',') {
                p = parse_event(skip_ws(p + 1));
                mark_ = p;
                if (p >= next_release_) mapped_progress(p);
                continue;
              }
              if (*p == ']') {
                mark_ = ++p;
                state = bare_ ? State::End : State::ObjNext;
                break;
              }
              unexpected(p, bare_ ? "',' or ']' in the trace array" : "',' or ']' in traceEvents");
            }
            break;
          case State::End:
            p = skip_ws(p);
            if (p < end_) fail(p, "the end of the file after the trace's closing bracket");
            mark_ = p;
            if (!eof_) throw NeedMore{};
            state = State::Done;
            break;
          case State::Done:
            break;
        }
        if (state == State::Done) break;
      }
    } catch (NeedMore&) {
      depth_ = 0;  // the item restarts at the top level; its nesting count restarts with it
      refill();
    }
  }
  if (!bare_ && !saw_trace_events_)
    throw UserError(origin_ + ": not a PyTorch profiler trace: expected a \"traceEvents\" array or a JSON array of events");
  store_.meta.input_bytes = base_ + static_cast<uint64_t>(end_ - data_);
  store_.meta.format = bare_ ? TraceFormat::BareArray : saw_2021_cats_ ? TraceFormat::Kineto2021 : TraceFormat::Kineto;
  return std::move(store_);
}

}  // namespace

EventStore parse_source(ByteSource& src, const std::string& origin, const ReadOptions& opt, size_t window) {
  Parser parser(src, origin, opt, window);
  return parser.run();
}

}  // namespace ts::trace::detail
