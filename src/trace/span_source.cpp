#include "trace/span_source.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "trace/trace_parser.h"

namespace ts::trace::detail {
namespace {

constexpr size_t kZeroPad = 64;  // zeroed bytes after every span (the parser's sentinel)
alignas(64) const char kZeros[kZeroPad + 16] = {};

uint64_t chunk_low(uint64_t k, uint64_t chunk) { return k * chunk >= kBack ? k * chunk - kBack : 0; }

class MappedSpans final : public SpanSource {
 public:
  MappedSpans(ByteSource& src, std::string_view whole, uint64_t chunk, uint64_t overlap)
      : SpanSource(chunk, overlap), src_(src), whole_(whole) {}
  Span span_at(uint64_t offset, size_t) override { return view(offset); }
  std::optional<Span> chunk(uint64_t k) override {
    if (k * chunk_bytes() >= whole_.size()) return std::nullopt;
    return view(chunk_low(k, chunk_bytes()));
  }
  bool chunk_ready(uint64_t) override { return true; }
  void release_before(uint64_t offset) override { src_.release_before(whole_.data() + offset); }
  uint64_t raw_consumed() const override { return src_.raw_consumed(); }

 private:
  // The rest of the file: a mapped file needs no refills, and the mapping has zeros after its end.
  Span view(uint64_t offset) const {
    offset = std::min<uint64_t>(offset, whole_.size());
    return Span{whole_.data() + offset, whole_.size() - static_cast<size_t>(offset), offset, true, nullptr};
  }
  ByteSource& src_;
  std::string_view whole_;
};

// Inflated buffers' memory, used again: a new buffer per chunk is new memory the kernel must
// zero on first touch, and on a VM that hands freed memory back to its host, back again each
// time (docs/BENCHMARKS.md, session 6). Every block has the largest chunk's size, so any fits.
class BufferPool {
 public:
  explicit BufferPool(size_t block) : block_(block) {}
  std::unique_ptr<char[]> take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<char[]> m = std::move(free_.back());
        free_.pop_back();
        return m;
      }
    }
    return std::unique_ptr<char[]>(new char[block_]);
  }
  // From a destructor: where the list cannot grow, the memory is simply freed.
  void give(std::unique_ptr<char[]> m) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      free_.push_back(std::move(m));
    } catch (...) {
    }
  }

 private:
  const size_t block_;
  std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> free_;
};

struct Buffer {
  uint64_t base = 0;
  size_t len = 0;
  bool last = false;
  std::unique_ptr<char[]> mem;
  std::shared_ptr<BufferPool> pool;  // where `mem` goes back when the last span lets go
  ~Buffer() {
    if (pool && mem) pool->give(std::move(mem));
  }
};

class InflatingSpans final : public SpanSource {
 public:
  InflatingSpans(ByteSource& gz, uint64_t chunk, uint64_t overlap, int ahead)
      : SpanSource(chunk, overlap),
        gz_(gz),
        ahead_(static_cast<uint64_t>(std::max(ahead, 2))),
        pool_(std::make_shared<BufferPool>(static_cast<size_t>(chunk + overlap) + kBack + kProbe + kZeroPad)) {}
  // Every thread that inflated did so inside a call of this source, and those have returned.
  ~InflatingSpans() override { cancel(); }
  void cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }

  Span span_at(uint64_t offset, size_t min_bytes) override {
    std::unique_lock<std::mutex> lk(mu_);
    std::shared_ptr<Buffer> b = wait_buffer(lk, offset);
    if (!b) return at_end(offset);
    uint64_t avail = b->base + b->len - offset;
    if (avail >= min_bytes || b->last)
      return Span{b->mem.get() + (offset - b->base), static_cast<size_t>(avail), offset, b->last, b};
    // The item runs past this buffer: join the following ones into one span (rare: an event
    // longer than the overlap, or a top-level value longer than a chunk).
    std::shared_ptr<char[]> joined(new char[min_bytes + kZeroPad]);
    size_t got = 0;
    bool eof = false;
    uint64_t at = offset;
    while (got < min_bytes) {
      b = wait_buffer(lk, at);
      if (!b) break;
      size_t n = static_cast<size_t>(std::min<uint64_t>(b->base + b->len - at, min_bytes - got));
      if (n == 0) {  // the end of a buffer cut short by an inflate error
        if (error_) std::rethrow_exception(error_);
        break;
      }
      std::memcpy(joined.get() + got, b->mem.get() + (at - b->base), n);
      got += n;
      at += n;
      if (b->last && at == b->base + b->len) {
        eof = true;
        break;
      }
    }
    std::memset(joined.get() + got, 0, kZeroPad);
    if (got < min_bytes && !eof && error_) std::rethrow_exception(error_);
    return Span{joined.get(), got, offset, eof, joined};
  }

  std::optional<Span> chunk(uint64_t k) override {
    std::unique_lock<std::mutex> lk(mu_);
    // Made on demand: buffers are made as far as a claimed chunk needs, whatever was released.
    ensure(lk, k);
    if (stop_ || produced_ <= k) return std::nullopt;
    if (k < first_) return Span{};  // released: the parse is already past it
    const std::shared_ptr<Buffer>& b = bufs_[k - first_];
    if (k * chunk_bytes() >= b->base + b->len && b->last) return std::nullopt;  // nothing of its own
    return Span{b->mem.get(), b->len, b->base, b->last, b};
  }
  // Ready also when no thread is inflating: the caller then inflates it at once, on its own.
  bool chunk_ready(uint64_t k) override {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_ || produced_ > k || ended_ || !producing_;
  }
  bool produce_ahead() override {
    std::unique_lock<std::mutex> lk(mu_);
    if (stop_ || ended_ || producing_ || produced_ >= first_ + ahead_) return false;
    produce_one(lk);
    return true;
  }
  void set_ready_hook(std::function<void()> hook) override {
    std::lock_guard<std::mutex> lock(hook_mu_);
    hook_ = std::move(hook);
  }
  void release_before(uint64_t offset) override {
    std::lock_guard<std::mutex> lock(mu_);
    // Keep the buffer before offset's own: the JSON may end in its overlap, and then that one
    // holds `offset` (wait_buffer).
    uint64_t k = offset / chunk_bytes();
    // With an overlap longer than a chunk, a buffer several chunks back may still reach past
    // `offset`: only buffers that end before it go.
    while (first_ + 1 < k && !bufs_.empty() && bufs_.front()->base + bufs_.front()->len <= offset) {
      bufs_.pop_front();
      ++first_;
    }
    cv_.notify_all();
  }
  uint64_t raw_consumed() const override { return raw_consumed_.load(std::memory_order_relaxed); }

 private:
  // The buffer holding `offset` (its chunk's, or the last one when the JSON ends in that
  // one's overlap), inflated here or by the thread inflating; null when the JSON ended before
  // `offset`. Throws the inflate error when the data stopped before `offset`.
  std::shared_ptr<Buffer> wait_buffer(std::unique_lock<std::mutex>& lk, uint64_t offset) {
    const uint64_t k = offset / chunk_bytes();
    ensure(lk, k);
    if (produced_ > k && k >= first_) return bufs_[k - first_];
    // The JSON ended in the overlap of an earlier buffer: with an overlap longer than a chunk
    // that buffer may lie several chunks before `offset`'s own, which was then never made.
    if (produced_ <= k && !bufs_.empty()) {
      const std::shared_ptr<Buffer>& last = bufs_.back();
      const uint64_t end = last->base + last->len;
      if (offset >= last->base && (offset < end || (last->last && offset == end))) return last;
    }
    if (error_) std::rethrow_exception(error_);
    return nullptr;
  }
  Span at_end(uint64_t offset) const { return Span{kZeros, 0, offset, true, nullptr}; }

  // Buffers up to k's: inflated on this thread, one after the other, while no other thread is
  // inflating (one gzip stream inflates in order); waits while one is. Returns when buffer k is
  // made, the data ended, or the source was cancelled. There is no inflating thread of its own:
  // with one beside the parse threads, three threads shared two cores and the parse threads
  // often waited on it with a core idle; now a thread that needs the next buffer makes it.
  void ensure(std::unique_lock<std::mutex>& lk, uint64_t k) {
    while (!(stop_ || produced_ > k || ended_)) {
      if (producing_) cv_.wait(lk);
      else produce_one(lk);
    }
  }

  // Inflates buffer produced_ with mu_ released (no other thread inflates meanwhile), then
  // publishes it, or what was inflated before an error and then the error.
  void produce_one(std::unique_lock<std::mutex>& lk) {
    producing_ = true;
    const uint64_t k = produced_;
    lk.unlock();
    const uint64_t c = chunk_bytes();
    std::shared_ptr<Buffer> b;
    bool eof = false;
    std::exception_ptr error;
    try {
      b = std::make_shared<Buffer>();
      b->base = chunk_low(k, c);
      const size_t cap = static_cast<size_t>((k + 1) * c + overlap() + kProbe - b->base);
      b->mem = pool_->take();  // cap + kZeroPad <= the pool's block (chunk_low is at most kBack back)
      b->pool = pool_;
      if (prev_) {  // the overlap: bytes the previous buffer already holds
        const uint64_t prev_end = prev_->base + prev_->len;
        if (prev_end > b->base) {
          b->len = static_cast<size_t>(prev_end - b->base);
          std::memcpy(b->mem.get(), prev_->mem.get() + (b->base - prev_->base), b->len);
        }
      }
      while (b->len < cap) {
        size_t n = read_some(b->mem.get() + b->len, cap - b->len);
        raw_consumed_.store(gz_.raw_consumed(), std::memory_order_relaxed);
        if (n == 0) {
          eof = true;
          break;
        }
        b->len += n;
      }
    } catch (...) {
      error = std::current_exception();  // a parse error in what was inflated comes first
    }
    if (b && b->mem) std::memset(b->mem.get() + b->len, 0, kZeroPad);
    lk.lock();
    try {
      if (b && b->mem) {
        b->last = eof;
        bufs_.push_back(b);
        produced_ = k + 1;
        prev_ = b;
      }
    } catch (...) {  // out of memory: the data ends here, with that error
      if (!error) error = std::current_exception();
    }
    if (eof || error) ended_ = true;
    if (error) error_ = error;
    producing_ = false;
    cv_.notify_all();
    lk.unlock();
    ready();
    lk.lock();
  }
  // The hook is called under its own mutex, never under mu_: the parallel reader holds its lock
  // while it asks chunk_ready(), and the hook takes that lock.
  void ready() {
    std::lock_guard<std::mutex> lock(hook_mu_);
    if (hook_) hook_();
  }

  // Reads of less than kStage go through a staging buffer: ISA-L is asked for large
  // pieces only, as the serial reader asks it (many tiny reads lost bytes in testing).
  size_t read_some(char* dst, size_t n) {
    if (stage_pos_ == stage_len_) {
      if (n >= kStage) return gz_.read(dst, n);
      if (!stage_) stage_.reset(new char[kStage]);
      stage_len_ = gz_.read(stage_.get(), kStage);
      stage_pos_ = 0;
      if (stage_len_ == 0) return 0;
    }
    size_t m = std::min(n, stage_len_ - stage_pos_);
    std::memcpy(dst, stage_.get() + stage_pos_, m);
    stage_pos_ += m;
    return m;
  }
  static constexpr size_t kStage = 1u << 20;
  std::unique_ptr<char[]> stage_;
  size_t stage_pos_ = 0, stage_len_ = 0;

  ByteSource& gz_;
  const uint64_t ahead_;
  std::shared_ptr<BufferPool> pool_;  // shared with the buffers, which may outlive this source
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Buffer>> bufs_;  // buffers first_, first_ + 1, ...
  uint64_t first_ = 0, produced_ = 0;
  bool ended_ = false, stop_ = false;
  std::exception_ptr error_;
  bool producing_ = false;       // a thread is inflating the next buffer (mu_ released)
  std::shared_ptr<Buffer> prev_;  // the last buffer made (its overlap starts the next one)
  std::atomic<uint64_t> raw_consumed_{0};
  std::mutex hook_mu_;
  std::function<void()> hook_;
};

}  // namespace

std::unique_ptr<SpanSource> mapped_spans(ByteSource& src, std::string_view whole, uint64_t chunk, uint64_t overlap) {
  return std::make_unique<MappedSpans>(src, whole, chunk, overlap);
}

std::unique_ptr<SpanSource> inflating_spans(ByteSource& gz, uint64_t chunk, uint64_t overlap, int ahead) {
  return std::make_unique<InflatingSpans>(gz, chunk, overlap, ahead);
}

}  // namespace ts::trace::detail
