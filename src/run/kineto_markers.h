#pragma once
// Kineto's marker lines, taken out of the job's stderr on its way to ours.
//
// Since pytorch/kineto#1325 (2026, in PyTorch 2.13's wheel) every profiler start and stop logs a
// line at Kineto's USDT severity ("USDT:2026-12-02 11:27:51 6171:6171
// SyncActivityProfilerHandler.cpp:52] profiler_start"). USDT is the highest severity Kineto has
// (libkineto/include/ILoggerObserver.h), so no KINETO_LOG_LEVEL that keeps Kineto's errors hides
// it. The lines are meant for a USDT log collector, not for people; trainscope's profiler window
// starts and stops a profiler in every rank, so without this filter each run printed them into the
// user's output. Only whole lines of that exact shape are dropped; every other byte passes at once
// (a line is held back only while it still reads as the start of one). A user who sets
// KINETO_LOG_LEVEL asks for Kineto's log: then nothing is filtered (run_session.cpp).
#include <cstddef>
#include <string>

namespace ts::run {

class KinetoMarkerFilter {
 public:
  // Appends to `out` what of `p[0..n)` passes: everything except complete marker lines.
  void feed(const char* p, size_t n, std::string& out);
  // The end of the stream: a line still held back passes as it is.
  void flush(std::string& out);

 private:
  std::string held_;       // the current line, while it may still be a marker line (else empty)
  bool at_line_start_ = true;
};

// Whether `line` (its '\n' and a '\r' before it allowed) is one of Kineto's USDT marker lines.
bool is_kineto_marker_line(const std::string& line);

}  // namespace ts::run
