#pragma once
// The one home of medians and percentiles: every layer's summaries (step times, kernel
// durations, sampler windows, experiment results) compute them here, so "median" and "p90"
// mean the same thing in every report.
#include <cstdint>
#include <span>
#include <vector>

namespace ts {

// Median: the middle value, or the mean of the two middle values for an even count; 0 when empty.
double median(std::vector<double> v);
// Integer version (nanoseconds): the mean of the two middle values is rounded down.
int64_t median_int64(std::vector<int64_t> v);
// The same on values the caller lets it reorder (no copy).
int64_t median_int64_in_place(std::span<int64_t> v);

// Percentile by linear interpolation between the closest ranks (numpy's default, "linear"):
// q in [0, 1] (clamped); 0 when empty.
double percentile(std::vector<double> v, double q);
// The same on values already sorted ascending (no copy); 0 when empty.
double percentile_sorted(const std::vector<double>& sorted, double q);
// Nearest-rank percentile of integers (the smallest value with at least q of the values at or
// below it), q in (0, 1]; 0 when empty.
int64_t percentile_nearest_rank(std::vector<int64_t> v, double q);

}  // namespace ts
