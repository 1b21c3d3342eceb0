#pragma once
// Is memory growing steadily? A leak is a rise over the run's steps that stands out of the
// readings' own noise and keeps going to the end; a cache that fills once, the profiler window's
// buffers and the allocator's warm-up are not. Used by memory-growth for the process RSS (CPU)
// and the caching allocator's allocated bytes (CUDA), at any rate that matters over a run.
#include <cstdint>
#include <vector>

namespace ts::diagnose {

struct GrowthTrend {
  int points = 0;               // readings tested (after warm-up)
  double slope = 0;             // bytes per step: Theil-Sen (median of pairwise slopes within segments)
  double grown = 0;             // slope x the steps the readings span
  double noise = 0;             // 1.4826 x the median absolute residual about the fitted line (a robust sigma)
  double tail_slope = 0;        // the same slope over the last third of the readings
  double tau = 0;               // Kendall's tau of reading against step (-1..1): how consistently it rises
  double span_steps = 0;        // steps between the first and the last reading
  bool leak = false;            // every test below passed
  // Every test but the run's length (kGrowthMinPoints, kGrowthMinSpanSteps): a rise that a run cut
  // short by an out-of-memory kill shows before its 20th step.
  bool rising = false;
};

// Thresholds (docs/FINDINGS.md "memory-growth"): at least kMinPoints readings over kMinSpan steps;
// the rise over the run >= kNoiseSigmas x the noise and >= kMinGrownBytes; consistent (tau >=
// kMinTau); still rising at the end (tail slope >= kTailShare x the slope).
inline constexpr int kGrowthMinPoints = 8;
inline constexpr int kGrowthMinRisingPoints = 3;  // `rising`: a slope and a noise need three readings
inline constexpr double kGrowthMinSpanSteps = 20;
inline constexpr double kGrowthNoiseSigmas = 6;
inline constexpr double kGrowthMinGrownBytes = 8.0 * 1024 * 1024;
inline constexpr double kGrowthMinTau = 0.5;
inline constexpr double kGrowthTailShare = 0.4;

// x: step numbers (increasing), y: bytes, segment: -1 leaves a reading out (warm-up, profiled),
// otherwise pairs are taken only within one segment (the profiler window raises memory once).
GrowthTrend growth_trend(const std::vector<double>& x, const std::vector<double>& y, const std::vector<int>& segment);

}  // namespace ts::diagnose
