#include "diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "diagnose/rules/rule.h"
#include "diagnose/scenario.h"

namespace ts::diagnose {
namespace {

std::string verdict_for(const Diagnosis& d) {
  const Finding* healthy = nullptr;
  for (const auto& f : d.findings)
    if (f.id == "compute-bound") healthy = &f;
  if (d.findings.empty())
    return d.scenario == Scenario::Unknown ? "No finding: the evidence shows no bottleneck trainscope checks for."
                                           : std::string("No finding. ") + scenario_title(d.scenario) + ".";
  const Finding& top = d.findings.front();
  if (top.id == "job-failed") return top.title + ".";  // nothing else was measured
  if (top.severity == Severity::Critical || top.recoverable_fraction >= th::kVerdictMinRecoverable)
    return top.recoverable_fraction > 0 && top.severity != Severity::Critical
               ? fmt::format("{}. Fixing it gives {}.", top.title, gain_text(top.recoverable_fraction))
               : fmt::format("{} ({}).", top.title, top.gain);
  if (!healthy) {
    if (top.recoverable_fraction > 0)
      return fmt::format("No large bottleneck: the biggest finding, {}, is worth {}.", top.id, gain_text(top.recoverable_fraction));
    return fmt::format("No bottleneck trainscope can size; {} finding{} below.", d.findings.size(),
                       d.findings.size() == 1 ? "" : "s");
  }
  // Healthy: say so, then the biggest thing left.
  std::string v = healthy->title + ".";
  for (const auto& f : d.findings)
    if (&f != healthy && f.recoverable_fraction > 0) {
      v += fmt::format(" Largest opportunity: {}.", f.id);
      break;
    }
  return v;
}

}  // namespace

double speedup(double f) { return 1.0 / (1.0 - std::clamp(f, 0.0, 0.99)); }

std::string gain_text(double f) {
  double s = speedup(f);
  if (f <= 0) return "no direct speed-up";
  if (s < 1.01) return "under 1% faster";
  if (s < 1.095) return fmt::format("up to {:.0f}% faster", (s - 1) * 100);
  return fmt::format("up to {:.1f}x", s);
}

void rank(std::vector<Finding>& fs) {
  std::stable_sort(fs.begin(), fs.end(), [](const Finding& a, const Finding& b) {
    // A job that never reached its first step: that is the report's first line, whatever else.
    bool af = a.id == "job-failed", bf = b.id == "job-failed";
    if (af != bf) return af;
    // Critical findings (wrong device, diverged loss) come first: nothing else matters until fixed.
    bool ac = a.severity == Severity::Critical, bc = b.severity == Severity::Critical;
    if (ac != bc) return ac;
    if (a.recoverable_fraction != b.recoverable_fraction) return a.recoverable_fraction > b.recoverable_fraction;
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return a.id < b.id;
  });
}

Diagnosis diagnose(const Evidence& ev) {
  Diagnosis d;
  for (const auto& r : rules::all_rules()) {
    if (auto f = r.fn(ev)) d.findings.push_back(std::move(*f));
  }
  rank(d.findings);
  auto sc = classify(ev, d.findings);
  d.scenario = sc.scenario;
  d.scenario_reason = sc.reason;
  d.verdict = verdict_for(d);
  return d;
}

Diagnosis merge(const std::vector<Diagnosis>& parts, const std::vector<std::string>& labels) {
  if (parts.size() == 1) return parts.front();
  Diagnosis out;
  std::map<std::string, size_t> index;
  std::map<std::string, std::vector<std::string>> where;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string label = i < labels.size() ? labels[i] : fmt::format("trace {}", i);
    for (const auto& f : parts[i].findings) {
      where[f.id].push_back(label);
      auto it = index.find(f.id);
      if (it == index.end()) {
        index[f.id] = out.findings.size();
        out.findings.push_back(f);
      } else if (f.recoverable_fraction > out.findings[it->second].recoverable_fraction) {
        out.findings[it->second] = f;
      }
    }
  }
  for (auto& f : out.findings) {
    const auto& w = where[f.id];
    f.evidence.push_back({"traces_affected", double(w.size()), "count"});
    std::string list;
    for (size_t i = 0; i < w.size() && i < 8; ++i) list += (i ? ", " : "") + w[i];
    if (w.size() > 8) list += fmt::format(", +{} more", w.size() - 8);
    f.source += " (" + list + ")";
  }
  rank(out.findings);
  // The job's scenario: the most common one across ranks (first wins ties).
  std::map<Scenario, int> votes;
  for (const auto& p : parts) votes[p.scenario]++;
  const Diagnosis* pick = &parts.front();
  for (const auto& p : parts)
    if (votes[p.scenario] > votes[pick->scenario]) pick = &p;
  out.scenario = pick->scenario;
  out.scenario_reason = pick->scenario_reason;
  out.verdict = verdict_for(out);
  return out;
}

}  // namespace ts::diagnose
