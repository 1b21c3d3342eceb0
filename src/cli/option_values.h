#pragma once
// Option values that are more than a number, spelled one way in every command: durations
// ("500ms", "0.5s", "2s") and step ranges ("12", "3-8", "3-", "-8"). Each comes with a CLI11
// validator, so a bad value is a usage error at parse time: one line ending "(see --help)",
// exit status 2, like any other bad flag.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ts::cli {

// "500ms", "0.5s", "2s": a number with a unit (ms or s; no bare numbers, whose unit a reader
// would have to guess). nullopt when not a duration.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view s);
// Accepts a duration between `min` and `max` (inclusive).
CLI::Validator duration_between(std::chrono::milliseconds min, std::chrono::milliseconds max);
// A value the validator accepted, as milliseconds.
std::chrono::milliseconds duration_value(const std::string& s);

// Inclusive step numbers; -1 = open on that side.
struct StepRange {
  int64_t first = -1, last = -1;
};
// "12", "3-8", "3-", "-8"; nullopt when malformed or first > last.
std::optional<StepRange> parse_step_range(std::string_view s);
// Accepts a step range; with `closed`, both ends must be given ("10-14") and first >= min_first.
CLI::Validator step_range(bool closed = false, int64_t min_first = 0);
StepRange step_range_value(const std::string& s);

// The regression gate's limit, "5%" or "5" (percent, 0-1000): experiment::parse_regression_limit.
CLI::Validator regression_limit();
// Adds --max-regression to `cmd` (compare, verify): `limit` stays empty unless it is given.
void add_max_regression(CLI::App* cmd, std::string& limit, const std::string& what);

}  // namespace ts::cli
