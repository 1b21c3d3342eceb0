// trainscope verify's outputs: the table (finding / setting / predicted / measured / resolved) and
// the code lines that make each fix permanent; and the JSON (schema trainscope.verify/1).
#include <fmt/format.h>

#include <fstream>

#include "experiment/verify.h"
#include "util/json_writer.h"

namespace ts::experiment {
namespace {

std::string x_or_dash(double v) { return v > 0 ? fmt::format("{:.2f}x", v) : "-"; }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string indent(const std::string& code, const char* pad) {
  std::string out = pad;
  for (char c : code) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out + "\n";
}

void write_run(JsonWriter& w, const VerifyRun& v) {
  w.begin_object();
  w.field("label", v.label).field("out_dir", v.out_dir).field("exit_status", v.exit_code).field("steps", v.steps);
  w.key("step_ms");
  if (v.step_ms > 0) w.value(v.step_ms); else w.null();
  w.array("findings", v.findings);
  w.key("overrides").begin_array();
  for (const auto& o : v.outcomes)
    w.begin_object().field("key", o.key).field("value", o.value).field("applied", o.applied).field("reason", o.reason).end_object();
  w.end_array();
  w.key("problem");
  if (v.problem.empty()) w.null(); else w.value(v.problem);
  w.end_object();
}

void write_fix(JsonWriter& w, const VerifyFix& f) {
  w.begin_object();
  w.field("finding", f.finding).field("title", f.title).field("setting", settings_text(f.settings));
  w.key("settings").begin_object();
  for (const auto& [k, v] : f.settings) w.field(k, v);
  w.end_object();
  w.field("predicted_speedup", f.predicted_speedup);
  w.key("measured_speedup");
  if (f.measured_speedup > 0) w.value(f.measured_speedup); else w.null();
  w.field("resolved", f.resolved);
  w.key("still_charged_ms");
  if (f.still_charged_ms >= 0) w.value(f.still_charged_ms); else w.null();
  w.field("code", f.code);
  w.key("not_applied");
  if (f.not_applied.empty()) w.null(); else w.value(f.not_applied);
  w.key("run");
  write_run(w, f.run);
  w.end_object();
}

}  // namespace

std::string verify_text(const VerifyResult& r) {
  std::string o = fmt::format("\ntrainscope verify: {}  [each run {} steps; measured: mean step over steps {}-{}]\n",
                              join(r.command), r.steps, r.first_step, r.last_step);
  o += fmt::format("\nBaseline: {:.2f} ms per step.", r.baseline.step_ms);
  if (r.baseline_titles.empty()) o += " No findings.\n";
  else {
    o += " Findings:\n";
    for (const auto& t : r.baseline_titles) o += "  - " + t + "\n";
  }
  std::vector<const VerifyFix*> rows;
  for (const auto& f : r.fixes) rows.push_back(&f);
  if (r.all) rows.push_back(&*r.all);
  if (!rows.empty()) {
    size_t fw = 7, sw = 7;
    for (const auto* f : rows) fw = std::max(fw, f->finding.size()), sw = std::max(sw, settings_text(f->settings).size());
    o += fmt::format("\n{:<{}}  {:<{}}  {:>9}  {:>9}  {}\n", "finding", fw, "setting (--set)", sw, "predicted", "measured",
                     "resolved");
    for (const auto* f : rows)
      o += fmt::format("{:<{}}  {:<{}}  {:>9}  {:>9}  {}\n", f->finding, fw, settings_text(f->settings), sw,
                       x_or_dash(f->predicted_speedup), x_or_dash(f->measured_speedup),
                       f->measured_speedup <= 0 ? "-" : f->resolved ? "yes" : "no");
    for (const auto* f : rows) {
      if (f->measured_speedup > 0)
        o += fmt::format("  {}: {:.2f} ms per step{}\n", f->finding, f->run.step_ms,
                         f->still_charged_ms >= 0 && r.baseline.step_ms > 0
                             ? fmt::format("; the re-run still charges it {:.2f} ms ({:.1f}% of the baseline's step)",
                                           f->still_charged_ms, 100 * f->still_charged_ms / r.baseline.step_ms)
                             : std::string());
      else
        o += fmt::format("  {}: not measured: {}\n", f->finding, f->run.problem);
      if (!f->not_applied.empty()) o += fmt::format("    not applied: {}\n", f->not_applied);
    }
    o += "\nMake it permanent (the settings above, in your code):\n";
    for (const auto& f : r.fixes)
      if (!f.code.empty()) o += fmt::format("  {}:\n{}", f.finding, indent(f.code, "    "));
  }
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  o += fmt::format("\nVerdict: {}\nOutput: {}/ (baseline/ and one folder per re-run, each with report.json)\n", r.verdict,
                   r.out_dir);
  return o;
}

std::string verify_json(const VerifyResult& r, const std::string& gate) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "trainscope.verify/1");
  w.array("command", r.command);
  w.field("out_dir", r.out_dir).field("steps", r.steps);
  w.key("measured_steps").begin_array().value(r.first_step).value(r.last_step).end_array();
  w.field("verdict", r.verdict);
  w.key("baseline");
  write_run(w, r.baseline);
  w.array("baseline_findings", r.baseline_titles);
  w.key("fixes").begin_array();
  for (const auto& f : r.fixes) write_fix(w, f);
  w.end_array();
  w.key("all");
  if (r.all) write_fix(w, *r.all); else w.null();
  w.array("notes", r.notes);
  if (!gate.empty()) w.key("gate").raw(gate);
  w.end_object();
  return w.take() + "\n";
}

void save_verify(const VerifyResult& r) {
  std::ofstream(r.out_dir + "/verify.txt") << verify_text(r);
  std::ofstream(r.out_dir + "/verify.json") << verify_json(r);
}

}  // namespace ts::experiment
