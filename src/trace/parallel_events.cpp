// traceEvents on several threads (docs/ARCHITECTURE.md, "trace").
//
// The array is cut every C bytes; each chunk is parsed on its own from the first element start
// after its cut (a '{' after a ',' and before a '"', looked for within the overlap), into a
// store of its own, until the next chunk's start. That start is only a guess (a string could
// hold "},{\""), so chunks are accepted in file order, each only where the accepted text
// before it ended exactly at its start: the grammar is then in the same state there as in a
// serial parse (inside the array, at an element), and so is every byte after. Where the guess
// was wrong, the accepted end moves on past it and the text up to the next guess is parsed
// again, serially on the merging thread. The result, errors included, is the serial reader's:
// the first error in file order wins, with the same byte offset and text, and the stores
// appended in file order intern their strings in order of first use, as one parser would.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "trace/parser.h"

namespace ts::trace::detail {

ChunkPlan plan_chunks(const ReadOptions& opt, uint64_t bytes) {
  ChunkPlan plan;
  plan.threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // About 8 chunks per thread (balance when another process takes a core), 1-16 MiB each:
  // a chunk's store then stays in cache-sized pieces and the slowest one adds little at the end.
  uint64_t per = bytes / (static_cast<uint64_t>(plan.threads) * 8);
  plan.chunk = opt.chunk_bytes ? opt.chunk_bytes : std::clamp<uint64_t>(per, 1u << 20, 16u << 20);
  plan.overlap = opt.chunk_overlap ? opt.chunk_overlap : std::min<uint64_t>(1u << 20, plan.chunk / 2);
  return plan;
}

namespace {

constexpr uint64_t kNoStop = UINT64_MAX;

// The first element start in the window after the cut at `g`: a '{' at [g, g + overlap) whose
// previous non-blank byte (at most kBack back) is ',' and next one (within kProbe) is '"'.
// Every span holding the window gives the same answer, so the two chunks beside a cut agree.
std::optional<uint64_t> find_start(const Span& s, uint64_t g, uint64_t overlap) {
  if (g < s.base || g >= s.end()) return std::nullopt;
  const char* floor = s.data + (std::max<uint64_t>(g >= kBack ? g - kBack : 0, s.base) - s.base);
  const char* p = s.data + (g - s.base);
  const char* limit = s.data + (std::min(g + overlap, s.end()) - s.base);
  while (p < limit) {
    p = static_cast<const char*>(std::memchr(p, '{', static_cast<size_t>(limit - p)));
    if (!p) break;
    const char* b = p - 1;
    while (b >= floor && kBytes.ws[static_cast<unsigned char>(*b)]) --b;
    if (b >= floor && *b == ',') {
      const char* f = p + 1;
      const char* last = p + kProbe - 1;
      while (f < last && kBytes.ws[static_cast<unsigned char>(*f)]) ++f;
      if (*f == '"') return s.base + static_cast<uint64_t>(p - s.data);
    }
    ++p;
  }
  return std::nullopt;
}

class ChunkedEvents {
 public:
  ChunkedEvents(Parser& main, SpanSource& spans, uint64_t first, int threads)
      : main_(main), spans_(spans), first_(first), k0_(first / spans.chunk_bytes()), threads_(threads),
        next_claim_(k0_), expect_events_((spans.chunk_bytes() + spans.overlap()) / 128 + 1024) {
    // The merging thread waits for chunk k or for a chunk to parse meanwhile: a chunk another
    // thread inflates wakes it (a 2 ms poll left one core idle while chunks waited).
    spans_.set_ready_hook([this] {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    });
  }
  // Cancels the source only when the array was not read to its end (an error): after a
  // successful run the parse goes on reading the JSON after the array from it, and a cancelled
  // source makes no more buffers (with none inflated ahead, the parse would wait forever).
  ~ChunkedEvents() {
    spans_.set_ready_hook(nullptr);
    stop(!closed_);
  }

  // Parses the whole array; returns the offset just after its ']'. Throws the first error.
  uint64_t run() {
    for (int t = 1; t < threads_; ++t) pool_.emplace_back([this] { worker(); });
    uint64_t pos = first_;
    bool at_sep = false;
    for (uint64_t k = k0_;;) {
      Slot* sl = wait_slot(k);
      ChunkOutcome o;
      if (sl) {
        ChunkOutcome& c = sl->o;
        if (c.kind == ChunkOutcome::Kind::Skipped || c.start < pos || (c.start == pos && at_sep)) {
          give_store(std::move(c.store));  // its start was a wrong guess, or behind the accepted text
          ++k;
          continue;
        }
        if (c.start == pos) {
          o = std::move(c);
          ++k;
        } else {
          o = resync(pos, at_sep, c.start);
        }
      } else {
        o = resync(pos, at_sep, kNoStop);
      }
      if (o.kind == ChunkOutcome::Kind::Failed) {
        stop(true);
        std::rethrow_exception(o.error);
      }
      main_.absorb(o);
      give_store(std::move(o.store));
      pos = o.at;
      at_sep = o.kind == ChunkOutcome::Kind::Incomplete && o.at_separator;
      if (o.kind == ChunkOutcome::Kind::Closed) {
        spans_.release_before(pos);
        closed_ = true;
        stop(false);
        return pos;
      }
      if (o.kind == ChunkOutcome::Kind::Next) {
        spans_.release_before(pos);
        if (main_.options().progress)
          main_.options().progress(pos, spans_.raw_consumed(), main_.source().raw_size());
      }
    }
  }

 private:
  struct Slot {
    bool done = false;
    ChunkOutcome o;
  };

  ChunkOutcome parse(const Span& s, uint64_t from, bool at_sep, uint64_t stop) {
    try {
      Parser p(main_.source(), main_.origin(), main_.options(), s, main_.bare(), take_store(), expect_events_);
      return p.parse_chunk(from, at_sep, stop);
    } catch (...) {
      ChunkOutcome o;
      o.kind = ChunkOutcome::Kind::Failed;
      o.start = from;
      o.error = std::current_exception();
      return o;
    }
  }

  // Chunk k from its own start to the next chunk's; `end` when the JSON ends before chunk k.
  ChunkOutcome work(uint64_t k, bool& end) {
    end = false;
    std::optional<Span> s = spans_.chunk(k);
    if (!s) {
      end = true;
      return {};
    }
    if (!s->data) return {};
    const uint64_t c = spans_.chunk_bytes(), ov = spans_.overlap();
    std::optional<uint64_t> start = k == k0_ ? std::optional<uint64_t>(first_) : find_start(*s, k * c, ov);
    if (!start) return {};
    uint64_t stop = kNoStop;
    for (uint64_t j = k + 1; j * c < s->end(); ++j)
      if (std::optional<uint64_t> f = find_start(*s, j * c, ov)) {
        stop = *f;
        break;
      }
    return parse(*s, *start, false, stop);
  }

  // Serially, on the merging thread, from the accepted end up to `stop`; the span grows while
  // an item runs past it.
  ChunkOutcome resync(uint64_t pos, bool at_sep, uint64_t stop) {
    size_t want = static_cast<size_t>(spans_.chunk_bytes() + spans_.overlap());
    for (;;) {
      Span s = spans_.span_at(pos, want);
      ChunkOutcome o = parse(s, pos, at_sep, stop);
      if (o.kind != ChunkOutcome::Kind::Incomplete || o.at != pos || o.at_separator != at_sep) return o;
      give_store(std::move(o.store));
      if (want >= kMaxItemBytes)
        main_.fail_at(pos, "an event or top-level value shorter than " + std::to_string(kMaxItemBytes >> 20) + " MiB");
      want = std::min<size_t>(want * 2, kMaxItemBytes);
    }
  }

  // Workers parse at most this many chunks past the one being merged: each parsed chunk holds
  // its store until merged, so running further ahead only costs memory (the merge is in order).
  bool too_far_ahead() const { return next_claim_ >= merged_ + 2 * static_cast<uint64_t>(threads_) + 2; }  // mu_ held
  bool claim(uint64_t& c) {  // mu_ held
    if (abort_ || next_claim_ >= end_k_) return false;
    c = next_claim_++;
    if (slots_.size() <= c - k0_) slots_.resize(c - k0_ + 1);
    return true;
  }
  void complete(uint64_t c, ChunkOutcome&& o, bool end) {  // mu_ held
    Slot& sl = slots_[c - k0_];
    if (end) end_k_ = std::min(end_k_, c);
    sl.o = std::move(o);
    sl.done = true;
    cv_.notify_all();
  }

  // Chunk k's outcome once parsed (parsing chunks meanwhile rather than waiting idle); null
  // past the last chunk.
  Slot* wait_slot(uint64_t k) {
    std::unique_lock<std::mutex> lk(mu_);
    if (k > merged_) {  // chunks before k are merged or skipped: the workers may run further ahead
      merged_ = k;
      cv_.notify_all();
    }
    for (;;) {
      if (k >= end_k_) return nullptr;
      if (k - k0_ < slots_.size() && slots_[k - k0_].done) return &slots_[k - k0_];
      uint64_t c;
      if (next_claim_ < end_k_ && !too_far_ahead() && spans_.chunk_ready(next_claim_) && claim(c)) {
        lk.unlock();
        bool end;
        ChunkOutcome o = work(c, end);
        lk.lock();
        complete(c, std::move(o), end);
        continue;
      }
      // Nothing to parse: inflate ahead rather than wait (without our lock: its hook takes it).
      lk.unlock();
      const bool made = spans_.produce_ahead();
      lk.lock();
      if (made) continue;
      cv_.wait_for(lk, std::chrono::milliseconds(2));
    }
  }

  void worker() {
    std::shared_ptr<void> guard = main_.source().guard_thread();
    for (;;) {
      uint64_t c;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return abort_ || next_claim_ >= end_k_ || !too_far_ahead(); });
        if (!claim(c)) return;
      }
      bool end;
      ChunkOutcome o = work(c, end);
      std::lock_guard<std::mutex> lock(mu_);
      complete(c, std::move(o), end);
      if (end) return;
    }
  }

  EventStore take_store() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return EventStore();
    EventStore s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  void give_store(EventStore&& s) {
    if (s.name.capacity() == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(s));
  }

  // Ends the workers: `cancel` also ends every wait for inflated data (the reader is giving up);
  // otherwise the parse after the array reads on to the end of the JSON.
  void stop(bool cancel) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abort_ = true;
    }
    cv_.notify_all();  // workers waiting to run ahead
    if (cancel) spans_.cancel();
    for (auto& t : pool_) t.join();
    pool_.clear();
  }

  Parser& main_;
  SpanSource& spans_;
  const uint64_t first_, k0_;
  const int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slot> slots_;  // chunk k0_ + i (references stay valid as it grows)
  uint64_t next_claim_, end_k_ = UINT64_MAX;
  uint64_t merged_ = k0_;  // the chunk the merge waits for
  bool abort_ = false;
  bool closed_ = false;  // run() read the array to its closing bracket
  std::vector<EventStore> free_;
  std::vector<std::thread> pool_;
  const size_t expect_events_;
};

}  // namespace

Parser::Parser(ByteSource& src, const std::string& origin, const ReadOptions& opt, const Span& span, bool bare,
               EventStore&& store, size_t expect_events)
    : src_(src), origin_(origin), opt_(opt), cap_(0), store_(std::move(store)) {
  data_ = mark_ = span.data;
  end_ = span.data + span.len;
  base_ = span.base;
  eof_ = span.eof;
  bare_ = bare;
  store_.clear_rows();
  intern_fixed_names();
  if (store_.name.capacity() < expect_events) {
    store_.reserve(expect_events);
    store_.args_table.reserve(expect_events / 4);
  }
}

ChunkOutcome Parser::parse_chunk(uint64_t from, bool at_separator, uint64_t stop_offset) {
  ChunkOutcome o;
  o.start = from;
  const char* p = data_ + (from - base_);
  const char* stop = stop_offset == kNoStop || stop_offset - base_ > static_cast<uint64_t>(end_ - data_) + 1
                         ? reinterpret_cast<const char*>(UINTPTR_MAX)
                         : data_ + (stop_offset - base_);
  bool in_element = !at_separator;
  try {
    for (;;) {
      if (in_element) {
        mark_ = p;
        p = parse_event(p);
        in_element = false;
      }
      mark_ = p;
      p = skip_ws(p);
      if (*p == ',') {
        // The next element's start must lie inside the span: at its end the blanks may go on.
        const char* q = skip_ws(p + 1);
        if (q >= end_ && !eof_) more("an event object '{'");
        p = q;
        in_element = true;
        if (p >= stop) {
          o.kind = ChunkOutcome::Kind::Next;
          o.at = offset(p);
          break;
        }
        continue;
      }
      if (*p == ']') {
        o.kind = ChunkOutcome::Kind::Closed;
        o.at = offset(p + 1);
        break;
      }
      unexpected(p, bare_ ? "',' or ']' in the trace array" : "',' or ']' in traceEvents");
    }
  } catch (NeedMore&) {
    o.kind = ChunkOutcome::Kind::Incomplete;
    o.at = offset(mark_);
    o.at_separator = !in_element;
  } catch (...) {
    o.kind = ChunkOutcome::Kind::Failed;
    o.error = std::current_exception();
  }
  o.saw_2021_cats = saw_2021_cats_;
  o.store = std::move(store_);
  return o;
}

void Parser::absorb(ChunkOutcome& o) {
  if (store_.size() + o.store.size() > max_rows()) fail_at(o.start, row_limit());
  append_store(store_, o.store);
  saw_2021_cats_ = saw_2021_cats_ || o.saw_2021_cats;
}

std::unique_ptr<SpanSource> Parser::inflating_source() {
  // Only a gzip file of known size, large enough to pay for the thread (about 16x inflation).
  if (!src_.compressed() || opt_.max_events || src_.raw_size() == 0) return nullptr;
  const uint64_t expect = src_.raw_size() * 16;
  if (expect < opt_.parallel_min_bytes) return nullptr;
  ChunkPlan plan = plan_chunks(opt_, expect);
  if (plan.threads <= 1) return nullptr;
  // Inflated buffers are memory the mapped file does not cost: smaller chunks, few ahead.
  if (!opt_.chunk_bytes) plan.chunk = std::min<uint64_t>(plan.chunk, 8u << 20);
  if (!opt_.chunk_overlap) plan.overlap = std::min<uint64_t>(plan.overlap, plan.chunk / 2);
  return inflating_spans(src_, plan.chunk, plan.overlap, plan.threads + 3);
}

const char* Parser::parse_events_parallel(const char* p) {
  if (opt_.max_events) return nullptr;
  std::unique_ptr<SpanSource> mapped;
  SpanSource* spans = spans_.get();
  ChunkPlan plan;
  if (spans) {
    plan = plan_chunks(opt_, src_.raw_size() * 16);
  } else {
    if (buf_ || static_cast<uint64_t>(end_ - p) < opt_.parallel_min_bytes) return nullptr;
    plan = plan_chunks(opt_, static_cast<uint64_t>(end_ - data_));
    if (plan.threads <= 1) return nullptr;
    mapped = mapped_spans(src_, std::string_view(data_, static_cast<size_t>(end_ - data_)), plan.chunk, plan.overlap);
    spans = mapped.get();
  }
  uint64_t end;
  {
    ChunkedEvents events(*this, *spans, offset(p), plan.threads);
    end = events.run();
  }
  if (!spans_) return data_ + (end - base_);
  Span s = spans_->span_at(end, 64u << 10);
  data_ = s.data;
  end_ = s.data + s.len;
  base_ = s.base;
  eof_ = s.eof;
  span_keep_ = std::move(s.keep);
  return data_;
}

}  // namespace ts::trace::detail
