#include "report/time_account_view.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ts::report {

std::vector<AccountPart> account_parts(const diagnose::TimeAccount& t) {
  return {{"before_first_step_s", "start-up", 's', t.before_first_step_s},
          {"compile_s", "compile", 'c', t.compile_s},
          {"train_steps_s", "training steps", '#', t.train_steps_s},
          {"data_wait_s", "data wait", 'd', t.data_wait_s},
          {"eval_s", "evaluation", 'e', t.eval_s},
          {"checkpoint_s", "checkpoints", 'k', t.checkpoint_s},
          {"profiler_s", "trainscope's profiler", 'p', t.profiler_s},
          {"other_s", "other", '.', t.other_s}};
}

std::string account_line(const diagnose::TimeAccount& t) {
  std::string o;
  for (const auto& p : account_parts(t)) {
    if (t.total_s <= 0 || p.s < 0.005 * t.total_s) continue;
    o += fmt::format("{}{} {:.1f} s ({:.0f}%)", o.empty() ? "" : " · ", p.label, p.s, 100 * p.s / t.total_s);
    // The loop's own loading queued for a core: a slow CPU share, not slow data.
    if (p.glyph == 'd' && t.data_queued_s >= 0.05 && t.data_queued_s >= 0.1 * t.data_wait_s)
      o += fmt::format(", {:.1f} s of it loading queued for a core", t.data_queued_s);
    // The first batches of each pass over worker processes (one per worker): they start, then load them.
    if (p.glyph == 'd' && t.data_start_s >= 0.05 && t.data_start_s >= 0.1 * t.data_wait_s)
      o += fmt::format(", {:.1f} s of it for newly started workers' first batches ({} start{})", t.data_start_s,
                       t.data_starts, t.data_starts == 1 ? "" : "s");
    if (p.glyph == 'e' && t.eval_start_s >= 0.05 && t.eval_start_s >= 0.1 * t.eval_s)
      o += fmt::format(", {:.1f} s of it for its loaders' newly started workers", t.eval_start_s);
    // What a short run's other mostly is: Python tearing down its modules after the script ended.
    if (p.glyph == '.' && t.exit_s >= 0.05 && t.exit_s >= 0.25 * t.other_s)
      o += fmt::format(", {:.1f} s of it the interpreter's exit", t.exit_s);
  }
  const bool ours = t.profiler_s > 0.005 * t.total_s;  // goodput's scale is the run without our profiler
  return o + fmt::format("{}goodput {:.0f}% (training steps' share of the {:.1f} s{})", o.empty() ? "" : " · ",
                         t.goodput_pct, ours ? t.job_s() : t.total_s, ours ? " outside trainscope's profiler" : "");
}

std::string account_strip(const diagnose::TimeAccount& t, int width) {
  if (t.total_s <= 0 || width <= 0) return "";
  // Largest remainders: the characters add up to the width, each bucket of >= 1% shows.
  const auto parts = account_parts(t);
  std::vector<int> n(parts.size());
  std::vector<std::pair<double, size_t>> rest;
  int used = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const double exact = width * parts[i].s / t.total_s;
    n[i] = static_cast<int>(std::floor(exact));
    if (n[i] == 0 && parts[i].s >= 0.01 * t.total_s) n[i] = 1;
    used += n[i];
    rest.push_back({exact - std::floor(exact), i});
  }
  std::sort(rest.begin(), rest.end(), std::greater<>());
  for (size_t k = 0; used < width && k < rest.size(); ++k)
    if (parts[rest[k].second].s > 0) ++n[rest[k].second], ++used;
  while (used > width) {  // the 1% minimums overflowed: take from the largest
    auto it = std::max_element(n.begin(), n.end());
    --*it, --used;
  }
  std::string o;
  for (size_t i = 0; i < parts.size(); ++i) o.append(static_cast<size_t>(std::max(0, n[i])), parts[i].glyph);
  return o;
}

}  // namespace ts::report
