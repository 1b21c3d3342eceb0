#include "experiment/findings_text.h"

#include <fmt/format.h>

namespace ts::experiment {

std::string findings_text(const std::vector<diagnose::Finding>& findings) {
  if (findings.empty()) return "";
  std::string out = "\nFindings:\n";
  for (const auto& f : findings) {
    out += fmt::format("  [{}] {}: {}{}\n", diagnose::severity_name(f.severity), f.id, f.title,
                       f.gain.empty() ? "" : fmt::format(" ({})", f.gain));
    if (!f.fix.empty()) out += fmt::format("      fix: {}\n", f.fix);
  }
  return out;
}

void findings_json(JsonWriter& w, const std::vector<diagnose::Finding>& findings) {
  w.key("findings").begin_array();
  for (const auto& f : findings) {
    w.begin_object();
    w.field("id", f.id).field("severity", diagnose::severity_name(f.severity)).field("title", f.title);
    w.field("source", f.source).field("fix", f.fix).field("fix_code", f.fix_code);
    w.field("recoverable_fraction", f.recoverable_fraction).field("gain", f.gain);
    w.key("evidence").begin_array();
    for (const auto& e : f.evidence) w.begin_object().field("name", e.name).field("value", e.value).field("unit", e.unit).end_object();
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

}  // namespace ts::experiment
