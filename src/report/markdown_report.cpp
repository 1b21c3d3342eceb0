// Markdown report: to paste into an issue or a pull request. Verdict, findings with fixes as
// code blocks, then the evidence tables (GitHub-flavoured Markdown).
#include <fmt/format.h>

#include "report/idle_by_cause.h"
#include "report/report.h"
#include "report/time_account_view.h"
#include "report/text_helpers.h"
#include "util/format.h"

namespace ts::report {
namespace {

// Table cells cannot hold '|' or newlines.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// Free text in a cell (host event names, reasons): escapes, besides '|', what Markdown would
// read as emphasis, code or links ("DataLoaderIter.__next__" would turn bold).
std::string text_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') c = ' ';
    if (c == '|' || c == '\\' || c == '_' || c == '*' || c == '`' || c == '[' || c == ']' || c == '<' || c == '>') out += '\\';
    out += c;
  }
  return out;
}

// GPU idle by cause (idle_by_cause.h: the terminal report's table).
void idle_by_cause_md(std::string& md, const analysis::TraceAnalysis& t) {
  const auto rows = idle_cause_rows(t);
  if (rows.empty()) return;
  const auto& a = t.gpu.attribution;
  md += fmt::format("\n### GPU idle by cause ({} idle in {} gaps, {:.1f}% of the GPU's span)\n\n", ts::human_ns(a.idle_ns), a.gaps,
                    t.gpu.idle_pct);
  md += "| cause | time | % of idle | % of step time | largest host event |\n|---|---:|---:|---:|---|\n";
  for (const auto& r : rows)
    md += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} |\n", analysis::idle_cause_name(r.cause), ts::human_ns(r.ns), r.pct_of_idle,
                      r.pct_of_step, text_cell(r.top_event));
}

void trace_md(std::string& md, const analysis::TraceAnalysis& t, const std::string& command, int top) {
  const auto& st = t.steps;
  md += t.path.empty() ? "\n## Trace " + trace_title(t.path, command) + "\n\n" : fmt::format("\n## Trace `{}`\n\n", t.path);
  md += fmt::format("{}{} events · {} steps · median step {}\n\n", t.device_name.empty() ? "" : t.device_name + " · ", t.events,
                    st.steps.size(), ts::human_ns(st.median_step_ns));
  md += "### Step time breakdown\n\n| class | share | time |\n|---|---:|---:|\n";
  const int64_t vals[] = {st.total.kernel, st.total.memcpy, st.total.memset, st.total.communication,
                          st.total.runtime, st.total.dataloader, st.total.cpu_exec, st.total.other};
  for (int i = 0; i < 8; ++i)
    md += fmt::format("| {} | {:.1f}% | {} |\n", breakdown_labels()[i], st.pct(vals[i]), ts::human_ns(vals[i]));
  const auto& g = t.gpu;
  if (g.present) {
    md += fmt::format(
        "\n### GPU time\n\n| span | busy | idle | compute | non-compute | utilisation in steps |\n|---:|---:|---:|---:|---:|---:|\n"
        "| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% |\n",
        ts::human_ns(g.span_ns), ts::human_ns(g.busy_ns), g.idle_pct, g.compute_pct, g.non_compute_pct, g.utilization_pct);
    md += fmt::format("\nIdle: host wait {} · kernel wait {} · other {}\n", ts::human_ns(g.idle_host_wait_ns),
                      ts::human_ns(g.idle_kernel_wait_ns), ts::human_ns(g.idle_other_ns));
  }
  idle_by_cause_md(md, t);
  if (!t.kernels.top.empty()) {
    md += fmt::format("\n### Top kernels ({} kernels, {:.0f} per step)\n\n| share | count | total | kernel |\n|---:|---:|---:|---|\n",
                      t.kernels.count, t.kernels.per_step);
    for (size_t i = 0; i < t.kernels.top.size() && int(i) < top; ++i) {
      const auto& r = t.kernels.top[i];
      md += fmt::format("| {:.1f}% | {} | {} | `{}` |\n", r.share_pct, r.count, ts::human_ns(r.total_ns), cell(fit(r.name, 90)));
    }
  }
  if (!t.copies.rows.empty()) {
    md += "\n### Copies\n\n| direction | memory | count | bytes | time | bandwidth |\n|---|---|---:|---:|---:|---:|\n";
    for (const auto& r : t.copies.rows)
      md += fmt::format("| {} | {} | {} | {} | {} | {:.1f} GB/s |\n", r.direction, r.kind, r.count, ts::human_bytes(r.bytes),
                        ts::human_ns(r.time_ns), r.bandwidth_gbps);
  }
  if (t.syncs.count > 0) {
    md += fmt::format("\n### Synchronisations ({:.1f} per step, {:.1f}% of step time)\n\n| kind | count | time |\n|---|---:|---:|\n",
                      t.syncs.per_step, t.syncs.pct_of_step);
    for (const auto& r : t.syncs.rows) md += fmt::format("| `{}` | {} | {} |\n", cell(r.kind), r.count, ts::human_ns(r.time_ns));
  }
  if (t.memory.present)
    md += fmt::format("\n### Memory\n\nPeak allocated {} · peak reserved {} · growth {} per step\n", ts::human_bytes(t.memory.peak_allocated),
                      ts::human_bytes(t.memory.peak_reserved), ts::human_bytes(t.memory.slope_bytes_per_step));
}

}  // namespace

std::string render_markdown(const ReportInput& in) {
  const auto& d = in.diagnosis;
  std::string md = "# trainscope report\n\n";
  md += "**Verdict:** " + d.verdict + "\n\n";
  md += fmt::format("**Scenario:** {}{}\n", diagnose::scenario_title(d.scenario),
                    d.scenario_reason.empty() ? "" : " — " + d.scenario_reason);
  if (in.agent && in.agent->time_account) {
    const auto& t = *in.agent->time_account;
    md += fmt::format("\n## Where the run's {:.1f} s went\n\n| | s | % |\n|---|---:|---:|\n", t.total_s);
    for (const auto& p : account_parts(t))
      md += fmt::format("| {} | {:.1f} | {:.0f}% |\n", p.label, p.s, t.total_s > 0 ? 100 * p.s / t.total_s : 0.0);
    md += fmt::format("\nGoodput (training steps' share of the wall time): {:.0f}%.\n", t.goodput_pct);
  }
  md += "\n## Findings\n\n";
  if (d.findings.empty()) md += "None.\n";
  else {
    md += "| # | finding | severity | gain | |\n|---:|---|---|---|---|\n";
    int i = 0;
    for (const auto& f : d.findings)
      md += fmt::format("| {} | `{}` | {} | {} | {} |\n", ++i, f.id, diagnose::severity_name(f.severity), cell(f.gain), cell(f.title));
  }
  int i = 0;
  for (const auto& f : d.findings) {
    md += fmt::format("\n### {}. `{}` — {}\n\n", ++i, f.id, f.title);
    md += fmt::format("*{} · confidence {:.0f}% · from {}*\n\n", diagnose::severity_name(f.severity), f.confidence * 100, f.source);
    if (!f.evidence.empty()) {
      md += "Evidence:";
      for (const auto& e : f.evidence) md += fmt::format(" `{}` {};", e.name, format_evidence(e));
      md.back() = '\n';
      md += "\n";
    }
    md += f.explanation + "\n\n";
    for (const auto& s : f.sites) {
      md += fmt::format("**At** `{}:{}`", s.path, s.line);
      if (!s.function.empty() && s.function != "<module>") md += fmt::format(" (`{}`)", s.function);
      if (!s.note.empty()) md += " — " + s.note;
      md += "\n";
      if (!s.code.empty()) md += "\n```python\n" + s.code + "\n```\n";
      if (s.caller_line > 0) {
        md += fmt::format("\nCalled from `{}:{}`", s.caller_path, s.caller_line);
        if (!s.caller_function.empty() && s.caller_function != "<module>") md += fmt::format(" (`{}`)", s.caller_function);
        md += "\n";
        if (!s.caller_code.empty()) md += "\n```python\n" + s.caller_code + "\n```\n";
      }
      md += "\n";
    }
    md += "**Fix:** " + f.fix + "\n";
    if (!f.fix_code.empty()) md += "\n```python\n" + f.fix_code + "\n```\n";
    if (!f.gain.empty()) md += "\n**Gain:** " + f.gain + "\n";
  }
  if (!in.ranks.empty()) {
    md += "\n## Ranks\n\n| rank | steps | median step | comm/step | GPU idle | wait/step | straggler | trace |\n|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (const auto& r : in.ranks)
      md += fmt::format("| {} | {} | {} | {} | {:.1f}% | {} | {} | `{}` |\n", r.rank, r.steps, ts::human_ns(r.median_step_ms * 1e6),
                        ts::human_ns(r.comm_ms_per_step * 1e6), r.idle_pct, ts::human_ns(r.wait_ms_per_step * 1e6),
                        r.straggler ? "**yes**" : "", cell(r.path));
  }
  for (const auto& t : in.traces) trace_md(md, t, in.command, in.top);
  md += "\n---\n*Generated by trainscope 0.1.0.*\n";
  return md;
}

}  // namespace ts::report
