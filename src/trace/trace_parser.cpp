#include "trace/trace_parser.h"

#include <cstring>

#include "trace/parser.h"
#include "trace/written_whole.h"
#include "util/error.h"

namespace ts::trace::detail {

void Parser::fail(const char* p, const std::string& what) const {
  std::string msg = origin_ + ": byte " + std::to_string(offset(p));
  if (src_.compressed()) msg += " (uncompressed)";
  msg += ": ";
  const bool at_end = p >= end_ && eof_;
  if (at_end) msg += "unexpected end of file (truncated?), ";
  msg += "expected " + what;
  if (at_end) throw CutOffError(msg);
  throw UserError(msg);
}

void Parser::refill() {
  size_t keep = static_cast<size_t>(end_ - mark_);
  if (spans_) {
    // Inflating source: a span from the item's start, at least twice what did not suffice.
    if (keep >= kMaxItemBytes)
      fail(mark_, "an event or top-level value shorter than " + std::to_string(kMaxItemBytes >> 20) + " MiB");
    Span s = spans_->span_at(offset(mark_), std::max<size_t>(keep * 2, 1u << 20));
    data_ = mark_ = s.data;
    end_ = s.data + s.len;
    base_ = s.base;
    eof_ = s.eof;
    span_keep_ = std::move(s.keep);
    if (opt_.progress) opt_.progress(base_ + s.len, spans_->raw_consumed(), src_.raw_size());
    return;
  }
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
            if (const char* after = parse_events_parallel(p)) {
              mark_ = p = after;
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
  // The last report says "all of it": the parallel paths report as their chunks finish, and the
  // last chunk may finish before a window boundary.
  if (opt_.progress) opt_.progress(store_.meta.input_bytes, src_.raw_size(), src_.raw_size());
  store_.meta.format = bare_ ? TraceFormat::BareArray : saw_2021_cats_ ? TraceFormat::Kineto2021 : TraceFormat::Kineto;
  return std::move(store_);
}


EventStore parse_source(ByteSource& src, const std::string& origin, const ReadOptions& opt, size_t window) {
  Parser parser(src, origin, opt, window);
  return parser.run();
}

}  // namespace ts::trace::detail
