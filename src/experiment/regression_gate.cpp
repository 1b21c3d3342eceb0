#include "experiment/regression_gate.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "util/json_writer.h"

namespace ts::experiment {
namespace {

bool is_note(const CompareFinding& f) { return f.severity == "info"; }

const CompareFinding* find(const std::vector<CompareFinding>& v, const std::string& id) {
  for (const auto& f : v)
    if (f.id == id) return &f;
  return nullptr;
}

std::string join(const std::vector<Regression>& v) {
  std::string s;
  for (const auto& r : v) s += (s.empty() ? "" : "; ") + r.what + " " + fmt::format("{:+.1f}%", r.change_pct) +
                               (r.detail.empty() ? "" : " (" + r.detail + ")");
  return s;
}

void settle(GateVerdict& g, const std::string& held) {
  g.pass = g.regressions.empty();
  g.line = g.pass ? fmt::format("within the {:g}% limit: {}", g.limit_pct, held)
                  : fmt::format("regression over the {:g}% limit: {}", g.limit_pct, join(g.regressions));
}

}  // namespace

std::optional<double> parse_regression_limit(const std::string& s) {
  std::string t;
  for (char c : s)
    if (c != ' ') t += c;
  if (!t.empty() && t.back() == '%') t.pop_back();
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !(v >= 0 && v <= 1000)) return std::nullopt;
  return v;
}

GateVerdict gate_compare(const CompareResult& r, double limit_pct) {
  GateVerdict g;
  g.limit_pct = limit_pct;
  const double a_ms = r.a.step_ms, b_ms = r.b.step_ms;
  const bool steps_known = a_ms > 0 && b_ms >= 0;
  if (steps_known && r.step_change_pct > limit_pct)
    g.regressions.push_back({"step time", r.step_change_pct, fmt::format("{:.2f} -> {:.2f} ms per step", a_ms, b_ms)});
  if (a_ms > 0 && b_ms < 0)  // B never reached a measured step (it crashed, or is no run at all)
    g.regressions.push_back({"step time", 100.0, r.b.label + " has no step time"});
  for (const auto& f : r.added) {
    if (is_note(f)) continue;
    // By how much: what it charges, as a share of A's step (its own share of B's step without one).
    double pct = 100.0 * f.recoverable_fraction * (steps_known ? b_ms / a_ms : 1.0);
    g.regressions.push_back({"new finding " + f.id, pct, fmt::format("{}: {}", f.severity, f.title)});
  }
  for (const auto& fa : r.a.findings) {
    const CompareFinding* fb = find(r.b.findings, fa.id);
    if (!fb || is_note(*fb)) continue;
    if (steps_known) {
      double ca = fa.recoverable_fraction * a_ms, cb = fb->recoverable_fraction * b_ms;
      double pct = 100.0 * (cb - ca) / a_ms;
      if (pct > limit_pct)
        g.regressions.push_back({"finding " + fa.id + " got worse", pct,
                                 fmt::format("charges {:.2f} -> {:.2f} ms per step", ca, cb)});
    } else {
      double pct = 100.0 * (fb->recoverable_fraction - fa.recoverable_fraction);
      if (pct > limit_pct)
        g.regressions.push_back({"finding " + fa.id + " got worse", pct,
                                 fmt::format("{:.0f}% -> {:.0f}% of the step", 100 * fa.recoverable_fraction,
                                             100 * fb->recoverable_fraction)});
    }
  }
  std::string held = steps_known ? fmt::format("step time {:+.1f}% ({:.2f} -> {:.2f} ms per step)", r.step_change_pct,
                                               a_ms, b_ms)
                                 : "no step time on both sides";
  held += ", no new or worse finding";
  settle(g, held);
  return g;
}

GateVerdict gate_verify(const VerifyResult& r, double limit_pct) {
  GateVerdict g;
  g.limit_pct = limit_pct;
  std::vector<const VerifyFix*> fixes;
  for (const auto& f : r.fixes) fixes.push_back(&f);
  if (r.all) fixes.push_back(&*r.all);
  std::string held;
  for (const VerifyFix* f : fixes) {
    const double base = r.baseline.step_ms;
    if (f->measured_speedup <= 0 || f->run.step_ms <= 0 || base <= 0 || f->predicted_speedup <= 0) {
      g.regressions.push_back({f->finding + " not measured", 100.0,
                               f->run.problem.empty() ? "the re-run has no measured step" : f->run.problem});
      continue;
    }
    const double predicted_ms = base / f->predicted_speedup;
    const double pct = 100.0 * (f->run.step_ms - predicted_ms) / predicted_ms;
    if (pct > limit_pct)
      g.regressions.push_back({f->finding + " fell short of its gain", pct,
                               fmt::format("{:.2f} ms per step, predicted {:.2f}: {:.2f}x of {:.2f}x", f->run.step_ms,
                                           predicted_ms, f->measured_speedup, f->predicted_speedup)});
    if (!f->resolved)
      g.regressions.push_back({f->finding + " not resolved",
                               base > 0 && f->still_charged_ms >= 0 ? 100.0 * f->still_charged_ms / base : 100.0,
                               fmt::format("the re-run still charges it {:.2f} ms per step", f->still_charged_ms)});
    held += fmt::format("{}{} {:.2f}x (predicted {:.2f}x)", held.empty() ? "" : ", ", f->finding, f->measured_speedup,
                        f->predicted_speedup);
  }
  settle(g, fixes.empty() ? "no fix to check" : held);
  return g;
}

std::string gate_json(const GateVerdict& g) {
  JsonWriter w;
  w.begin_object();
  w.field("max_regression_pct", g.limit_pct).field("pass", g.pass).field("line", g.line);
  w.key("regressions").begin_array();
  for (const auto& r : g.regressions)
    w.begin_object().field("what", r.what).field("change_pct", r.change_pct).field("detail", r.detail).end_object();
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace ts::experiment
