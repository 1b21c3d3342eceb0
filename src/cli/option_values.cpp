#include "cli/option_values.h"

#include "experiment/regression_gate.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace ts::cli {
namespace {

std::string show(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000) : fmt::format("{}ms", d.count());
}

std::optional<int64_t> whole_number(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.size() > 15) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view s) {
  size_t unit = s.find_first_not_of("0123456789.");
  if (unit == 0 || unit == std::string_view::npos) return std::nullopt;
  double v = 0;
  const std::string num(s.substr(0, unit));
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v)) return std::nullopt;
  const std::string_view u = s.substr(unit);
  double ms = u == "ms" ? v : u == "s" ? v * 1000 : -1;
  if (ms < 0) return std::nullopt;
  return std::chrono::milliseconds(std::llround(ms));
}

CLI::Validator duration_between(std::chrono::milliseconds min, std::chrono::milliseconds max) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        auto d = parse_duration(s);
        if (!d) return fmt::format("{} is not a duration (a number with ms or s: 500ms, 0.5s)", s);
        if (*d < min || *d > max) return fmt::format("{} is not between {} and {}", s, show(min), show(max));
        return "";
      },
      "DURATION");
}

CLI::Validator regression_limit() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return experiment::parse_regression_limit(s) ? "" : s + " is not a percentage between 0 and 1000 (5% or 5)";
      },
      "PCT");
}

void add_max_regression(CLI::App* cmd, std::string& limit, const std::string& what) {
  cmd->add_option("--max-regression", limit, what)->check(regression_limit());
}

std::chrono::milliseconds duration_value(const std::string& s) {
  return parse_duration(s).value_or(std::chrono::milliseconds(0));
}

std::optional<StepRange> parse_step_range(std::string_view s) {
  StepRange r;
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) {
    auto n = whole_number(s);
    if (!n) return std::nullopt;
    r.first = r.last = *n;
    return r;
  }
  const std::string_view a = s.substr(0, dash), b = s.substr(dash + 1);
  if (a.empty() && b.empty()) return std::nullopt;
  if (!a.empty()) {
    auto n = whole_number(a);
    if (!n) return std::nullopt;
    r.first = *n;
  }
  if (!b.empty()) {
    auto n = whole_number(b);
    if (!n) return std::nullopt;
    r.last = *n;
  }
  if (r.first >= 0 && r.last >= 0 && r.first > r.last) return std::nullopt;
  return r;
}

CLI::Validator step_range(bool closed, int64_t min_first) {
  return CLI::Validator(
      [closed, min_first](std::string& s) -> std::string {
        auto r = parse_step_range(s);
        if (closed && (!r || r->first < 0 || r->last < 0))
          return fmt::format("{} is not FIRST-LAST with FIRST <= LAST (e.g. 10-14)", s);
        if (!r) return fmt::format("{} is not N, A-B, A- or -B with A <= B (step numbers)", s);
        if (r->first >= 0 && r->first < min_first)
          return fmt::format("{}: FIRST must be >= {}", s, min_first);
        return "";
      },
      closed ? "FIRST-LAST" : "STEPS");
}

StepRange step_range_value(const std::string& s) { return parse_step_range(s).value_or(StepRange{}); }

}  // namespace ts::cli
