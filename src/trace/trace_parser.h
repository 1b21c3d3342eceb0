#pragma once
// The streaming trace parser behind read_trace/parse_trace.
//
// It pulls uncompressed JSON from a ByteSource into a fixed window (8 MiB by default) and
// parses one "item" at a time: a top-level key with its value, or one element of
// traceEvents. When an item runs past the end of the window, the unconsumed tail is moved to
// the front, the window refilled, and the item parsed again from its start; only a single
// item larger than the window makes the window grow (up to kMaxItemBytes).
#include <cstddef>
#include <string>

#include "trace/byte_source.h"
#include "trace/event_store.h"
#include "trace/reader.h"

namespace ts::trace::detail {

inline constexpr size_t kDefaultWindowBytes = 8u << 20;
inline constexpr size_t kMaxItemBytes = 256u << 20;  // one event or one top-level value
inline constexpr int kMaxDepth = 256;                // nesting inside skipped values

// `window` is the initial window size; tests pass tiny ones to exercise refills everywhere.
EventStore parse_source(ByteSource& src, const std::string& origin, const ReadOptions& opt,
                        size_t window = kDefaultWindowBytes);

}  // namespace ts::trace::detail
