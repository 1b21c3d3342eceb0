// The user's lines a finding points at (evidence.h CodeSite -> finding.h SiteRef). Rules name the
// role whose line carries their cause or their fix; what the note says is the rule's.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/rules/rule.h"

namespace ts::diagnose {

const CodeSite* AgentEvidence::site(const std::string& role) const {
  const CodeSite* best = nullptr;
  for (const auto& s : sites)
    if (s.role == role && !s.file.empty() && (!best || s.calls > best->calls)) best = &s;
  return best;
}

}  // namespace ts::diagnose

namespace ts::diagnose::rules {

SiteRef site_ref(const CodeSite& s, const std::string& note) {
  SiteRef r;
  r.role = s.role;
  r.path = s.path.empty() ? s.file : s.path;
  r.file = s.file;
  r.line = s.line;
  r.function = s.function;
  r.code = s.code;
  r.note = note;
  r.caller_path = s.caller_path;
  r.caller_line = s.caller_line;
  r.caller_function = s.caller_function;
  r.caller_code = s.caller_code;
  r.outside_code = !s.parsed_from.empty();
  return r;
}

namespace {

bool has(const Finding& f, const CodeSite& s) {
  return std::any_of(f.sites.begin(), f.sites.end(),
                     [&](const SiteRef& r) { return r.file == s.file && r.line == s.line && r.role == s.role; });
}

}  // namespace

bool point_at(Finding& f, const Evidence& ev, const std::string& role, const std::string& note) {
  if (!ev.agent) return false;
  const CodeSite* s = ev.agent->site(role);
  if (!s || has(f, *s)) return false;
  f.sites.push_back(site_ref(*s, note));
  return true;
}

int point_at_calls(Finding& f, const Evidence& ev, const std::vector<std::string>& roles, int max) {
  if (!ev.agent) return 0;
  std::vector<const CodeSite*> found;
  for (const auto& s : ev.agent->sites)
    if (!s.file.empty() && s.calls > 0 && std::find(roles.begin(), roles.end(), s.role) != roles.end())
      found.push_back(&s);
  std::stable_sort(found.begin(), found.end(), [](const CodeSite* a, const CodeSite* b) {
    return a->host_ms != b->host_ms ? a->host_ms > b->host_ms : a->calls > b->calls;
  });
  int n = 0;
  for (const auto* s : found) {
    if (n >= max) break;
    if (has(f, *s)) continue;
    std::string note;
    if (s->calls_per_step >= 0)
      note = fmt::format("{:.3g} call{} per step, {:.3g} ms per step", s->calls_per_step,
                         s->calls_per_step == 1 ? "" : "s", s->ms_per_step);
    else
      note = fmt::format("{} calls, {:.3g} ms", s->calls, s->host_ms);
    if (s->role == "h2d" && s->calls > 0) {
      note += fmt::format(", {:.3g} MiB per call", s->bytes / double(s->calls) / (1024.0 * 1024.0));
      if (s->pageable > 0) note += fmt::format(", {}% from pageable memory", s->pageable * 100 / s->calls);
    }
    f.sites.push_back(site_ref(*s, note));
    ++n;
  }
  return n;
}

bool point_at_frame(Finding& f, const analysis::IdleEntry& e, const std::string& note) {
  // "{file}({line}): {function}"
  const std::string& n = e.frame;
  size_t close = n.rfind("): ");
  size_t open = close == std::string::npos ? std::string::npos : n.rfind('(', close);
  if (open == std::string::npos || open == 0) return false;
  int64_t line = 0;
  for (size_t i = open + 1; i < close; ++i) {
    if (n[i] < '0' || n[i] > '9') return false;
    line = line * 10 + (n[i] - '0');
  }
  SiteRef r;
  r.role = "trace-frame";
  r.file = r.path = n.substr(0, open);
  r.line = line;
  r.function = n.substr(close + 3);
  r.note = note;
  for (const auto& x : f.sites)
    if (x.file == r.file && x.line == r.line) return false;
  f.sites.push_back(std::move(r));
  return true;
}

const CodeSite* config_site(const Evidence& ev, const std::string& framework) {
  if (!ev.agent) return nullptr;
  for (const auto& s : ev.agent->sites)
    if (s.role == "config" && !s.file.empty() && (framework.empty() || s.detail.rfind(framework, 0) == 0)) return &s;
  return nullptr;
}

void point_at_fix(Finding& f, const Evidence& ev, const std::string& role, const std::string& note,
                  const KnobFix& hf_fix, const KnobFix& lightning_fix) {
  auto given = [](const KnobFix& k) { return !k.set.empty() || !k.why.empty(); };
  if (const CodeSite* hf = config_site(ev, "transformers")) {
    if (given(hf_fix) && !has(f, *hf)) f.sites.push_back(site_ref(*hf, knob_note(*hf, hf_fix)));
    return;
  }
  point_at(f, ev, role, note);
  if (const CodeSite* pl = config_site(ev, "lightning"); pl && given(lightning_fix) && !has(f, *pl))
    f.sites.push_back(site_ref(*pl, knob_note(*pl, lightning_fix)));
}

}  // namespace ts::diagnose::rules
