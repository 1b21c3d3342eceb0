#pragma once
// The trace parser's class, shared by its parts (internal to src/trace):
//   trace_parser.cpp    the window (refills, errors) and the top-level state machine
//   parse_values.cpp    JSON values: strings, numbers, skipping
//   parse_events.cpp    one traceEvents element -> one EventStore row
//   parse_metadata.cpp  top-level keys: deviceProperties, distributedInfo, baseTimeNanoseconds...
//   parallel_events.cpp traceEvents cut into chunks parsed on several threads, then merged
// Hot helpers (short strings, member/element loops) are inline here.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/byte_source.h"
#include "trace/event_store.h"
#include "trace/json_scan.h"
#include "trace/object_shapes.h"
#include "trace/reader.h"
#include "trace/span_source.h"
#include "trace/trace_parser.h"
#include "util/error.h"

namespace ts::trace::detail {

struct NeedMore {};  // the current item runs past the window: refill and parse it again

inline constexpr size_t kPad = 64;  // zeroed bytes after the data: a sentinel for the scanning loops

// One event while it is being parsed; committed to the store only once its '}' is seen,
// so an item parsed twice (after a refill) is never stored twice. Its args and a collective's
// parameters are set up only when the event has some: most events have neither, and clearing
// their 120 bytes for every event showed in the parser's profile.
struct PendingEvent {
  uint32_t name = kNoString;
  Category cat = Category::Unknown;
  Phase ph = Phase::Other;
  bool has_ph = false, has_args = false, has_comm = false;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0;
  int64_t corr = kNone, ext = kNone, flow_id = kNone;
  uint32_t dims = kNoString, types = kNoString, meta_name = kNoString;
  // Raw storage: a member with initialisers would be cleared for every event all the same.
  alignas(EventArgs) unsigned char args_mem[sizeof(EventArgs)];
  alignas(CommArgs) unsigned char comm_mem[sizeof(CommArgs)];
  EventArgs& args() {
    if (!has_args) new (args_mem) EventArgs{}, has_args = true;
    return *std::launder(reinterpret_cast<EventArgs*>(args_mem));
  }
  CommArgs& comm_args() {
    if (!has_comm) new (comm_mem) CommArgs{}, has_comm = true;
    return *std::launder(reinterpret_cast<CommArgs*>(comm_mem));
  }
};

// What parsing one chunk of traceEvents came to (parallel_events.cpp). Offsets are in the
// uncompressed JSON.
struct ChunkOutcome {
  enum class Kind : uint8_t {
    Skipped,     // no element start found in the chunk's window, or past the end
    Next,        // stopped at the element starting at `at` (the first at or after the stop)
    Closed,      // the array closed; `at` is just after its ']'
    Incomplete,  // the span ended inside an item: resume at `at` (before a separator when at_separator)
    Failed,      // `error` is the parse error (the serial reader's, byte offset and all)
  } kind = Kind::Skipped;
  bool at_separator = false;
  bool saw_2021_cats = false;
  uint64_t start = 0, at = 0;
  std::exception_ptr error;
  EventStore store;
};

// How traceEvents is cut: threads, chunk size and overlap for a trace of about `bytes`.
struct ChunkPlan {
  int threads = 1;
  uint64_t chunk = 0, overlap = 0;
};
ChunkPlan plan_chunks(const ReadOptions& opt, uint64_t bytes);

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
      spans_ = inflating_source();
      if (spans_) {
        // Inflated by the parse threads, in chunk-sized buffers the parse works in place.
        Span s = spans_->span_at(0, 64u << 10);
        data_ = mark_ = s.data;
        end_ = s.data + s.len;
        eof_ = s.eof;
        span_keep_ = std::move(s.keep);
      } else {
        buf_.reset(new char[cap_ + kPad]);
        data_ = end_ = mark_ = buf_.get();
        std::memset(buf_.get(), 0, kPad);
      }
    }
    intern_fixed_names();
    // Reserve the columns from the file size: growing by doubling would copy every column and
    // touch twice the memory. So err high: real traces hold 220-470 bytes of JSON per event
    // (modern Kineto / 2021 form) and gzip shrinks them 10-30x; assume 128 bytes and 16x.
    // Unused reservation is only address space, never resident. The columns are not advised
    // into transparent huge pages: on the 2-core benchmark VM a fresh process's first touch of
    // 160 MB took 0.25-0.64 s in huge pages against 0.10-0.13 s in 4 KiB pages (freed memory goes
    // back to the host, and a 2 MiB page must be found, compacted and backed whole), and
    // `analyze` of a 527 MB trace went from 0.70 s to 0.59 s median (docs/BENCHMARKS.md).
    uint64_t expect_bytes = src_.raw_size() * (src_.compressed() ? 16 : 1);
    uint64_t expect_events = std::min<uint64_t>(expect_bytes / 128 + 1024, uint64_t(1) << 27);
    if (opt_.max_events) expect_events = std::min<uint64_t>(expect_events, opt_.max_events);
    store_.reserve(static_cast<size_t>(expect_events));
    store_.args_table.reserve(static_cast<size_t>(expect_events / 4));
  }

  EventStore run();

  // A parser for one chunk of traceEvents: elements in `span`, into `store` (emptied first,
  // its columns' memory reused). `bare`: the trace is a bare array (for the error texts).
  Parser(ByteSource& src, const std::string& origin, const ReadOptions& opt, const Span& span, bool bare,
         EventStore&& store, size_t expect_events);
  // Parses elements from offset `from` (an element start, or before a separator) until the
  // next element would start at or after `stop`, the array closes, the span ends or an error.
  ChunkOutcome parse_chunk(uint64_t from, bool at_separator, uint64_t stop);
  // Appends a chunk's events (accepted in file order) to this parser's store.
  void absorb(ChunkOutcome& o);
  [[noreturn]] void fail_at(uint64_t offset, const std::string& what) const {
    fail(data_ + (offset - base_), what);
  }
  // The most events a store may hold: ReadOptions::max_events, within the 32-bit row numbers.
  uint64_t max_rows() const { return opt_.max_events ? std::min(opt_.max_events, kMaxRows) : kMaxRows; }
  std::string row_limit() const { return "at most " + std::to_string(max_rows()) + " events (the reader's limit)"; }
  const std::string& origin() const { return origin_; }
  ByteSource& source() { return src_; }
  const ReadOptions& options() const { return opt_; }
  bool bare() const { return bare_; }

 private:
  enum class State { Start, ObjFirst, ObjKey, ObjNext, EvFirst, EvNext, End, Done };

  // ---- window ----
  void refill();
  std::unique_ptr<SpanSource> inflating_source();
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
  // Inside `depth` open containers (their closing brackets in stack[0, depth)), or at a
  // container's opening bracket with depth 0: just after the outermost one's close.
  const char* skip_nested(const char* p, char* stack, int depth);
  // From just after a member's value to the '}' closing its object (at it, not past it).
  const char* skip_rest_of_object(const char* p);
  const char* skip_literal(const char* p) const;
  const char* number_end(const char* p) const {
    const char* q = scan_number(p);
    if (q == end_ && !eof_) throw NeedMore{};
    return q;
  }
  // Number (or numeric string) scaled by 10^scale into `out`; false if absent/not numeric.
  // The common shapes inline, everything else (strings, exponents, the window's end) out of line.
  const char* read_scaled(const char* p, int scale, int64_t& out, bool& ok) {
    if (is_number_start(*p)) {
      const char* q = parse_scaled_fast(p, scale, out);
      if (q && (q < end_ || eof_)) [[likely]] {
        ok = true;
        return q;
      }
    }
    return read_scaled_slow(p, scale, out, ok);
  }
  [[gnu::noinline]] const char* read_scaled_slow(const char* p, int scale, int64_t& out, bool& ok);
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
  // A string's text interned (any other value: its raw JSON text).
  const char* read_interned(const char* p, uint32_t& out);
  const char* read_time(const char* p, int64_t& out, const char* field) {
    bool ok;
    const char* after = read_scaled(p, 3, out, ok);
    if (!ok && *p != 'n') bad_time(p, field);  // null is allowed and means absent
    return after;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_time(const char* p, const char* field) const;
  const char* read_id(const char* p, int64_t& out) {
    if (*p == '"') return read_id_string(p, out);
    bool ok;
    int64_t v = 0;
    const char* after = read_scaled(p, 0, v, ok);
    if (!ok && *p != 'n') bad_id(p);
    out = ok ? v : 0;
    return after;
  }
  [[gnu::noinline]] const char* read_id_string(const char* p, int64_t& out);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_id(const char* p) const;
  template <class F>
  const char* for_each_member(const char* p, const char* what, F&& on_member);
  // The same from '{' or, with after_value, from just after a member's value (where reading by
  // layouts leaves an object to be read member by member).
  template <class F>
  const char* members_from(const char* p, bool after_value, const char* what, F&& on_member);
  template <class F>
  const char* for_each_element(const char* p, const char* what, F&& on_element);

  // ---- trace structure ----
  const char* parse_event(const char* p);
  const char* parse_event_args(const char* p, PendingEvent& ev);
  // One member's value (field: what its key names; parse_events.cpp).
  const char* event_value(uint8_t field, const char* v, PendingEvent& ev);
  const char* arg_value(uint8_t field, const char* v, PendingEvent& ev);
  // An object ('{' at p) along the layouts in `shapes`, then member by member where they part
  // (object_shapes.h); field_of(key) names a member's field, value(field, p) reads its value.
  // preset(field, code) applies a constant that a learnt literal holds (what value() made of
  // it) and says whether the rest of the object is to be skipped.
  template <class FieldOf, class Value, class Preset>
  const char* parse_object(const char* p, ObjectShapes& shapes, const char* what, FieldOf field_of, Value&& value,
                           Preset&& preset);
  void commit(PendingEvent& ev, const char* p);
  Category category_of(std::string_view cat);
  const char* parse_top_value(const char* p, std::string_view key);
  const char* parse_device(const char* p);
  // At the first element of traceEvents (mapped file or inflating source): parses the array
  // on several threads and returns just after its ']', or nullptr to parse it serially.
  const char* parse_events_parallel(const char* p);
  void intern_fixed_names() {
    memory_id_ = store_.strings.intern("[memory]");
    process_name_id_ = store_.strings.intern("process_name");
    thread_name_id_ = store_.strings.intern("thread_name");
  }

  ByteSource& src_;
  const std::string& origin_;
  const ReadOptions& opt_;
  size_t cap_;
  static constexpr size_t kReleaseStep = 16u << 20;
  std::unique_ptr<char[]> buf_;  // the read() window (null when the file is mapped)
  std::unique_ptr<SpanSource> spans_;  // .json.gz inflated on its own thread (then buf_ is null)
  std::shared_ptr<const void> span_keep_;  // the memory behind the current span
  const char* data_;  // start of the window: buf_, or the mapped file
  const char* end_;   // end of valid data in the window (a zero byte sits there)
  const char* next_release_ = reinterpret_cast<const char*>(UINTPTR_MAX);
  const char* mark_;  // start of the item being parsed
  uint64_t base_ = 0;  // uncompressed offset of buf_[0]
  bool eof_ = false;
  std::string scratch_;  // decoded strings with escapes
  int depth_ = 0;
  // Set by a value reader that skipped the rest of its object up to the '}' (a flow event
  // that is only counted); parse_object then ends the object there.
  bool object_skipped_ = false;
  // Set by a value reader whose value is one of a few constants ("ph", "cat"): what it made of
  // it and where its text ends, so that parse_object can learn it into the layout's literal.
  int16_t const_code_ = -1;
  const char* const_end_ = nullptr;

  EventStore store_;
  bool bare_ = false, saw_trace_events_ = false, saw_2021_cats_ = false;
  uint32_t memory_id_, process_name_id_, thread_name_id_;
  struct CatEntry {
    std::string text;
    Category cat;
  };
  std::vector<CatEntry> cat_cache_;
  // Layouts of events and of their args, as learnt. Args have a trie per category (the event's
  // "cat" comes before its "args" in Kineto's layout): a kernel's, a runtime call's and an
  // operator's args part after their first key, and in one trie each event whose category
  // differs from the last one's would pay a mispredicted compare there.
  static constexpr size_t kCategories = static_cast<size_t>(Category::Other) + 1;
  ObjectShapes event_shapes_, args_shapes_[kCategories];
};


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


template <class F>
const char* Parser::for_each_member(const char* p, const char* what, F&& on_member) {
  return members_from(p, false, what, std::forward<F>(on_member));
}

template <class F>
const char* Parser::members_from(const char* p, bool after_value, const char* what, F&& on_member) {
  // p at '{', or (after_value) just after a member's value. on_member(key, p_at_value) returns
  // the pointer after the value.
  p = skip_ws(after_value ? p : p + 1);
  if (*p == '}') return p + 1;
  if (after_value) {
    if (*p != ',') unexpected_in(p, "',' or '}' in ", what);
    p = skip_ws(p + 1);
  }
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


}  // namespace ts::trace::detail
