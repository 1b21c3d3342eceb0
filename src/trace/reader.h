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
  // Refuse traces with more events than this (bounded memory on hostile input). 0 = no limit.
  uint64_t max_events = 0;
  // A named pipe must deliver its first bytes (or close) within this long (-1: no bound).
  int pipe_wait_ms = 30000;
};

EventStore read_trace(const std::string& path, const ReadOptions& opt = {});
// Parses JSON text already in memory (tests, fuzzing); `origin` names it in errors.
EventStore parse_trace(std::string_view json, const std::string& origin = "<memory>");

}  // namespace ts::trace
