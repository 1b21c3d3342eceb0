#pragma once
// The uncompressed JSON of a trace as spans of memory, for the parallel reader
// (parallel_events.cpp; internal to src/trace).
//
// The text is cut every `chunk` bytes. Chunk k is a span of [k*chunk - kBack, (k+1)*chunk +
// overlap + kProbe): its own bytes, a few before (to look back from a cut) and `overlap` after
// (to finish the event that crosses the next cut, and to find where the next chunk starts).
// A mapped file serves views of the mapping; a .json.gz is inflated into one buffer per chunk
// (the overlap copied from the previous buffer) by whichever parse thread needs the next buffer
// first, one thread at a time, and ahead of need by a thread that would otherwise wait, at most
// `ahead` buffers past what the parser has released: memory stays bounded whatever the size.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "trace/byte_source.h"

namespace ts::trace::detail {

inline constexpr size_t kBack = 64;   // bytes kept before a cut (looking back for the ',')
inline constexpr size_t kProbe = 64;  // bytes kept after the overlap (looking on for the '"')

struct Span {
  const char* data = nullptr;  // uncompressed bytes [base, base + len), zero padding after
  size_t len = 0;
  uint64_t base = 0;
  bool eof = false;  // the JSON ends at the end of this span
  std::shared_ptr<const void> keep;  // the memory behind `data`, held while the span is used
  uint64_t end() const { return base + len; }
};

class SpanSource {
 public:
  SpanSource(uint64_t chunk, uint64_t overlap) : chunk_(chunk), overlap_(overlap) {}
  virtual ~SpanSource() = default;
  uint64_t chunk_bytes() const { return chunk_; }
  uint64_t overlap() const { return overlap_; }
  // Bytes from `offset`: at least `min_bytes` unless the JSON ends first (then eof). Inflates
  // them or waits for the thread inflating them; throws an inflate error (ts::UserError) when
  // the data stops short because of one.
  virtual Span span_at(uint64_t offset, size_t min_bytes) = 0;
  // Chunk k's span; an empty optional past the end of the JSON (or after an inflate error, or
  // once cancelled); a span with null data when chunk k was already released. Inflates or
  // waits; never throws.
  virtual std::optional<Span> chunk(uint64_t k) = 0;
  // chunk(k) would not wait for another thread (it may still inflate it on this one).
  virtual bool chunk_ready(uint64_t k) = 0;
  // A thread that would otherwise wait makes the next buffer ahead of need (bounded); false when
  // there is nothing to do. Never throws: an error is kept for the span that reaches it.
  virtual bool produce_ahead() { return false; }
  // The parser is done with everything before `offset`.
  virtual void release_before(uint64_t offset) = 0;
  virtual uint64_t raw_consumed() const = 0;
  // Wakes and ends every wait (the reader is giving up).
  virtual void cancel() {}
  // Called (on the thread that inflated it, no lock of this source held) whenever a chunk becomes
  // ready or the data ends, so a reader that has other work to wait for too (chunks parsed by
  // other threads) need not poll chunk_ready(). Cleared with nullptr before the hook's owner goes.
  virtual void set_ready_hook(std::function<void()>) {}

 private:
  uint64_t chunk_, overlap_;
};

// Views of a mapped plain file (`whole`, from ByteSource::map_whole).
std::unique_ptr<SpanSource> mapped_spans(ByteSource& src, std::string_view whole, uint64_t chunk, uint64_t overlap);
// Inflates `gz` (a compressed ByteSource) on the threads that ask for its chunks, one at a time.
std::unique_ptr<SpanSource> inflating_spans(ByteSource& gz, uint64_t chunk, uint64_t overlap, int ahead);

}  // namespace ts::trace::detail
