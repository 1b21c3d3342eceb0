#pragma once
// The utilisation pattern of a GPU over a window, and what it means.
//   idle:        mean < 5% and p90 < 10%: nothing runs on the GPU.
//   sawtooth:    busy/idle alternation with a regular period (>= 3 rising edges, period
//                spread 1.4826*MAD/median < 30%, >= 3 samples per period): the classic
//                data-starvation signature (a GPU fed batches too slowly).
//   steady-high: no alternation, mean >= 70%.
//   steady-low:  no alternation, mean < 70% (the GPU is never fed enough work).
//   irregular:   large swings without a regular period.
//   unknown:     fewer than 8 samples.
// Busy/idle is decided with hysteresis between p5 and p95 (enter busy above 60% of the
// range, leave below 40%), so noise around one level does not read as alternation; a
// p5..p95 range under 30 points is steady.
#include <span>
#include <string>

#include "sample/series.h"

namespace ts::sample {

struct Pattern {
  std::string kind = "unknown";  // idle | sawtooth | steady-high | steady-low | irregular | unknown
  double period_ms = 0;          // sawtooth: median busy-to-busy period
  double duty_pct = 0;           // sawtooth: share of time busy
  double mean_pct = -1;
  double idle_pct = -1;          // share of the window below the idle threshold
  int cycles = 0;
};

Pattern detect_pattern(std::span<const Point> points);

// One line for people: "sawtooth 140 ms, GPU idle 38%: the GPU waits for data".
std::string describe(const Pattern& p);

}  // namespace ts::sample
