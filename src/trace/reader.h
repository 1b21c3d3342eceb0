#pragma once
// Reading a trace file (.json or .json.gz, any of the forms in event_store.h) into an EventStore.
// Bad input throws ts::UserError with one line: "<file>: byte <offset>: <what was expected>".
#include <cstdint>
#include <functional>
#include <string>

#include "trace/event_store.h"

namespace ts::trace {

struct ReadOptions {
  // Called now and then with (uncompressed bytes consumed, compressed bytes consumed, file size).
  std::function<void(uint64_t, uint64_t, uint64_t)> progress;
  // Refuse traces that would store more events than this (bounded memory on hostile input). 0 = no limit.
  uint64_t max_events = 0;
  // A named pipe must deliver its first bytes (or close) within this long (-1: no bound).
  int pipe_wait_ms = 30000;
  // traceEvents of a mapped .json or of a .json.gz is parsed on this many threads (0: one per
  // core, 1: serially), when it holds at least parallel_min_bytes of JSON. Never with max_events
  // (the limit needs the running count), pipes or memory.
  int threads = 0;
  uint64_t parallel_min_bytes = 8u << 20;
  // Where traceEvents is split (0: chosen from the size): about every chunk_bytes, at the first
  // element start within chunk_overlap bytes after the cut. Tests force tiny values so every
  // split path (an event across a cut, no element start found, an error right after a cut) runs.
  uint64_t chunk_bytes = 0, chunk_overlap = 0;
  // Events and args in a layout seen before are read literal by literal (object_shapes.h);
  // false reads every member by its key. Both give the same store and the same errors (the
  // tests compare them).
  bool learn_layouts = true;
  // Flow events (ph "s", "t", "f": the arrows from a launch to its kernel, forward to backward)
  // are counted in TraceMeta::flow_events but not stored unless asked: no analysis reads them
  // (a kernel finds its launch by correlation id), and they are 24-35% of the events of the
  // public traces in tests/data. Such a flow is read up to its "ph" (Kineto writes it first);
  // the rest of its object is skipped as any unread value is, strings whole and brackets
  // matched: a truncated or unbalanced flow is still an error, but its values are not read.
  bool keep_flows = false;
};

EventStore read_trace(const std::string& path, const ReadOptions& opt = {});
// About the peak memory of reading `path` and analysing the store (to schedule many traces):
// the store and the analysis index take up to ~0.5x the uncompressed JSON (measured 0.25-0.4x
// for the store, docs/BENCHMARKS.md), a gzip's size is taken from its trailer or as 16x.
uint64_t estimate_read_memory(const std::string& path);
// Parses JSON text already in memory (tests, fuzzing); `origin` names it in errors.
EventStore parse_trace(std::string_view json, const std::string& origin = "<memory>", const ReadOptions& opt = {});

}  // namespace ts::trace
