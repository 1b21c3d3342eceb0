#pragma once
// The full-screen view of `trainscope watch` (ncurses): one panel per GPU (utilisation and
// SM/tensor activity bars with history sparklines, memory, temperature, power, clocks,
// clock-event flags, the pattern in words), per-core CPU bars, the job's processes.
// Keys: q quit, p pause (freeze the view; sampling and recording go on), s change the
// process sort (CPU, RSS, PID).
#include <atomic>
#include <string>

#include "sample/sampler.h"

namespace ts::cli {

struct WatchScreenOptions {
  std::string recording;  // "recording to ... (run N)" or ""
  double duration_s = 0;  // 0: until q
  bool color = true;
};

// Runs until q, `stop` or the duration. Must run on a terminal.
void run_watch_screen(const sample::Sampler& s, const WatchScreenOptions& o, const std::atomic<bool>& stop);

}  // namespace ts::cli
