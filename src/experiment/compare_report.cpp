// compare's terminal output and JSON: formatting only.
#include <algorithm>
#include <cmath>
#include <ranges>
#include <fmt/format.h>

#include "experiment/compare.h"
#include "util/json_writer.h"

namespace ts::experiment {

static std::string short_name(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

std::string compare_text(const CompareResult& r) {
  std::string out = fmt::format("Compare\n  A: {} ({}, {} steps)\n  B: {} ({}, {} steps)\n\n", r.a.label, r.a.kind,
                                r.a.steps, r.b.label, r.b.kind, r.b.steps);
  if (r.a.step_ms > 0 && r.b.step_ms >= 0)
    out += fmt::format("  Step time (median): {:.2f} ms -> {:.2f} ms ({:+.1f}%, {:.2f}x {})\n", r.a.step_ms, r.b.step_ms,
                       r.step_change_pct, r.speedup >= 1 ? r.speedup : (r.speedup > 0 ? 1 / r.speedup : 0),
                       r.speedup >= 1 ? "faster" : "slower");
  if (r.a.data_wait_pct >= 0 && r.b.data_wait_pct >= 0)
    out += fmt::format("  Waiting for data:   {:.1f}% -> {:.1f}% of the step\n", r.a.data_wait_pct, r.b.data_wait_pct);
  if (r.a.gpu_idle_pct >= 0 && r.b.gpu_idle_pct >= 0)
    out += fmt::format("  GPU idle:           {:.1f}% -> {:.1f}%\n", r.a.gpu_idle_pct, r.b.gpu_idle_pct);
  if (!r.a.account.empty() && !r.b.account.empty()) {
    // The whole run, bucket by bucket (seconds; goodput in %): both runs' accounts.
    out += fmt::format("\n  {:<22} {:>10} {:>10} {:>10}\n", "the whole run", "A", "B", "delta");
    for (const auto& [k, a] : r.a.account) {
      auto it = std::find_if(r.b.account.begin(), r.b.account.end(), [&](const auto& p) { return p.first == k; });
      if (it == r.b.account.end()) continue;
      const bool pct = k == "goodput_pct";
      const std::string name = pct ? "goodput %" : k.substr(0, k.size() - 2) + " s";
      out += fmt::format("  {:<22} {:>10.1f} {:>10.1f} {:>+10.1f}\n", name, a, it->second, it->second - a);
    }
  }
  if (!r.classes.empty()) {
    out += fmt::format("\n  {:<14} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "per step", "A ms", "B ms", "delta ms", "A %",
                       "B %");
    for (auto& c : r.classes) {
      if (c.a_ms == 0 && c.b_ms == 0) continue;
      out += fmt::format("  {:<14} {:>10.2f} {:>10.2f} {:>+10.2f} {:>7.1f}% {:>7.1f}%\n", c.name, c.a_ms, c.b_ms,
                         c.b_ms - c.a_ms, c.a_pct, c.b_pct);
    }
  }
  if (!r.kernels.empty()) {
    out += fmt::format("\n  {:<60} {:>9} {:>9} {:>9} {:>9}\n", "kernels, largest change first (per step)", "A n", "B n",
                       "A ms", "B ms");
    for (auto& k : r.kernels)
      out += fmt::format("  {:<60} {:>9.1f} {:>9.1f} {:>9.3f} {:>9.3f}\n", short_name(k.name, 60), k.a.count_per_step,
                         k.b.count_per_step, k.a.ms_per_step, k.b.ms_per_step);
  }
  out += "\n";
  for (auto& f : r.resolved) out += fmt::format("  resolved  {:<28} {}\n", f.id, f.title);
  for (auto& f : r.added) out += fmt::format("  new       {:<28} {}\n", f.id, f.title);
  for (auto& f : r.kept) out += fmt::format("  still     {:<28} {}\n", f.id, f.title);
  if (r.resolved.empty() && r.added.empty() && r.kept.empty()) out += "  No findings on either side.\n";
  return out;
}

std::string compare_json(const CompareResult& r, const std::string& gate) {
  JsonWriter w;
  auto side = [&](const CompareSide& s) {
    w.begin_object();
    w.field("label", s.label).field("kind", s.kind).field("device_name", s.device_name).field("steps", s.steps);
    w.field("step_ms", s.step_ms).field("gpu_idle_pct", s.gpu_idle_pct).field("data_wait_pct", s.data_wait_pct);
    w.array("findings", s.findings | std::views::transform(&CompareFinding::id));
    w.key("time_account");
    if (s.account.empty()) {
      w.null();
    } else {
      w.begin_object();
      for (const auto& [k, v] : s.account) w.field(k, v);
      w.end_object();
    }
    w.end_object();
  };
  auto findings = [&](const char* key, const std::vector<CompareFinding>& v) {
    w.key(key).begin_array();
    for (auto& f : v)
      w.begin_object().field("id", f.id).field("title", f.title).field("severity", f.severity)
          .field("recoverable_fraction", f.recoverable_fraction).end_object();
    w.end_array();
  };
  w.begin_object();
  w.field("kind", "compare");
  w.key("a");
  side(r.a);
  w.key("b");
  side(r.b);
  w.field("step_change_pct", r.step_change_pct).field("speedup", r.speedup);
  w.key("classes").begin_array();
  for (auto& c : r.classes)
    w.begin_object().field("name", c.name).field("a_ms_per_step", c.a_ms).field("b_ms_per_step", c.b_ms)
        .field("a_pct", c.a_pct).field("b_pct", c.b_pct).end_object();
  w.end_array();
  w.key("kernels").begin_array();
  for (auto& k : r.kernels)
    w.begin_object().field("name", k.name).field("a_count_per_step", k.a.count_per_step)
        .field("b_count_per_step", k.b.count_per_step).field("a_ms_per_step", k.a.ms_per_step)
        .field("b_ms_per_step", k.b.ms_per_step).end_object();
  w.end_array();
  findings("resolved", r.resolved);
  findings("new", r.added);
  findings("still", r.kept);
  if (!gate.empty()) w.key("gate").raw(gate);
  w.end_object();
  return w.take() + "\n";
}

}  // namespace ts::experiment
