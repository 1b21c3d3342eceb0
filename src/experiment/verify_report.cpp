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

}  // namespace

// A fix that adds compilation (torch.compile) pays it once per process and wins it back step by
// step: the whole run of each (run.time_account) and the steps after which it pays back.
std::string compile_trade(const VerifyRun& base, const VerifyRun& fix) {
  if (base.compile_s < 0 || fix.compile_s < 0 || fix.compile_s - base.compile_s < 0.5) return "";
  const double added = fix.compile_s - base.compile_s;
  const double saved_ms = base.step_ms - fix.step_ms;
  std::string o = fmt::format("the whole run: {:.1f} s -> {:.1f} s over these steps; compilation adds {:.1f} s", base.run_s,
                              fix.run_s, added);
  if (saved_ms > 0)
    o += fmt::format(", won back after about {:.0f} steps at {:.2f} ms saved per step", added * 1e3 / saved_ms, saved_ms);
  else
    o += ", and the compiled step is not faster: it never pays back";
  return o;
}

namespace {

void write_run(JsonWriter& w, const VerifyRun& v) {
  w.begin_object();
  w.field("label", v.label).field("out_dir", v.out_dir).field("exit_status", v.exit_code).field("steps", v.steps);
  w.key("step_ms");
  if (v.step_ms > 0) w.value(v.step_ms); else w.null();
  w.key("spread");
  if (v.spread >= 0) w.value(v.spread); else w.null();
  w.key("run_s");
  if (v.run_s >= 0) w.value(v.run_s); else w.null();
  w.key("compile_s");
  if (v.compile_s >= 0) w.value(v.compile_s); else w.null();
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

void write_patch(JsonWriter& w, const VerifyPatch& p) {
  w.begin_object();
  w.field("file", p.file).field("written", p.written).field("diff", p.diff);
  w.array("files", p.files);
  w.array("fixes", p.fixes);
  w.key("edits").begin_array();
  for (const auto& e : p.edits)
    w.begin_object().field("fix", e.fix).field("file", e.file).field("line", e.line).field("what", e.what).end_object();
  w.end_array();
  w.array("refused", p.refused);
  w.array("notes", p.notes);
  w.field("compared_with", p.compared_with);
  auto num = [&](const char* k, double v) {
    w.key(k);
    if (v > 0) w.value(v); else w.null();
  };
  num("predicted_speedup", p.predicted_speedup);
  num("set_speedup", p.set_speedup);
  num("set_step_ms", p.set_step_ms);
  num("measured_speedup", p.measured_speedup);
  num("step_ms", p.run.step_ms);
  w.field("tolerance", p.tolerance).field("reproduced", p.reproduced);
  w.key("problem");
  if (p.problem.empty()) w.null(); else w.value(p.problem);
  w.key("run");
  write_run(w, p.run);
  w.end_object();
}

std::string spread_note(const VerifyPatch& p) {
  return p.tolerance > kPatchTolerance ? " (the runs' own spread)" : "";
}

std::string patch_text(const VerifyPatch& p) {
  std::string o = fmt::format("\nPatch ({}): ", p.file);
  if (p.edits.empty()) o += "no edit written.\n";
  else {
    o += fmt::format("{} edit{} of your code", p.edits.size(), p.edits.size() == 1 ? "" : "s");
    if (!p.files.empty()) {
      o += " in ";
      for (size_t i = 0; i < p.files.size(); ++i) o += (i ? ", " : "") + p.files[i];
    }
    o += ":\n";
    for (const auto& e : p.edits)
      o += e.line > 0 ? fmt::format("  {}:{}  {}: {}\n", e.file, e.line, e.fix, e.what)
                      : fmt::format("  {}  {}: {}\n", e.file, e.fix, e.what);
  }
  for (const auto& r : p.refused) o += "  not patched: " + r + "\n";
  for (const auto& n : p.notes) o += "  note: " + n + "\n";
  if (p.run.step_ms > 0)
    o += fmt::format("  the patched copy: {:.2f} ms per step, {}; the --set run ({}): {:.2f} ms, {}; predicted {}: {}\n",
                     p.run.step_ms, x_or_dash(p.measured_speedup), p.compared_with, p.set_step_ms, x_or_dash(p.set_speedup),
                     x_or_dash(p.predicted_speedup),
                     p.reproduced ? fmt::format("reproduced within {:.0f}%{}", 100 * p.tolerance, spread_note(p))
                                  : fmt::format("not reproduced within {:.0f}%{}", 100 * p.tolerance, spread_note(p)));
  if (p.written) o += fmt::format("  written: {} (apply it here with `git apply {}` or `patch -p1 < {}`)\n", p.file, p.file, p.file);
  else o += "  not written: " + p.problem + "\n";
  if (!p.diff.empty()) o += "\n" + p.diff;
  return o;
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
    // The patch's own re-run, beside the --set measurement it must reproduce.
    if (r.patch && !r.patch->edits.empty())
      o += fmt::format("{:<{}}  {:<{}}  {:>9}  {:>9}  {}\n", "patch", fw, "(the patched copy, no --set)", sw,
                       x_or_dash(r.patch->predicted_speedup), x_or_dash(r.patch->measured_speedup),
                       r.patch->run.step_ms <= 0 ? "-" : r.patch->reproduced ? "reproduced" : "not reproduced");
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
      if (const std::string t = compile_trade(r.baseline, f->run); !t.empty()) o += "    " + t + "\n";
    }
    o += "\nMake it permanent (the settings above, in your code):\n";
    for (const auto& f : r.fixes)
      if (!f.code.empty()) o += fmt::format("  {}:\n{}", f.finding, indent(f.code, "    "));
  }
  for (const auto& n : r.notes) o += "  note: " + n + "\n";
  if (r.patch) o += patch_text(*r.patch);
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
  w.key("patch");
  if (r.patch) write_patch(w, *r.patch); else w.null();
  if (!gate.empty()) w.key("gate").raw(gate);
  w.end_object();
  return w.take() + "\n";
}

void save_verify(const VerifyResult& r) {
  std::ofstream(r.out_dir + "/verify.txt") << verify_text(r);
  std::ofstream(r.out_dir + "/verify.json") << verify_json(r);
}

}  // namespace ts::experiment
