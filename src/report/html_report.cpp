// HTML report: one self-contained file (inline CSS, inline script, inline SVG; nothing fetched).
// The text (verdict, findings, tables) is written here; the charts are drawn by the inline
// script from the JSON report embedded in the page, so the page and --json never disagree.
#include <fmt/format.h>

#include "report/html_assets.h"
#include "report/idle_by_cause.h"
#include "report/report.h"
#include "report/time_account_view.h"
#include "report/text_helpers.h"
#include "util/format.h"

namespace ts::report {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// JSON inside <script>: "</script" would end the element and "<!--" changes how the parser reads
// it. '<' only occurs inside JSON strings, where \u003c means the same character.
std::string script_safe(const std::string& json) {
  std::string o;
  o.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      o += "\\u003c";
    else
      o += c;
  }
  return o;
}

std::string sev_class(diagnose::Severity s) { return std::string("sev-") + diagnose::severity_name(s); }

void findings_html(std::string& h, const diagnose::Diagnosis& d) {
  h += fmt::format("<h2>Findings ({})</h2>\n", d.findings.size());
  if (d.findings.empty()) h += "<div class=\"card empty\">No finding.</div>\n";
  for (const auto& f : d.findings) {
    h += fmt::format("<section class=\"finding {}\" id=\"finding-{}\">\n", sev_class(f.severity), esc(f.id));
    h += fmt::format(
        "<div class=\"top\"><span class=\"badge {}\">{}</span><span class=\"fid\">{}</span>"
        "<span class=\"meta\">confidence {:.0f}% · from {}</span></div>\n",
        sev_class(f.severity), diagnose::severity_name(f.severity), esc(f.id), f.confidence * 100, esc(f.source));
    h += "<div class=\"ftitle\">" + esc(f.title) + "</div>\n";
    if (!f.gain.empty()) h += "<div class=\"gain\">" + esc(f.gain) + "</div>\n";
    if (!f.evidence.empty()) {
      h += "<div class=\"chips\">";
      for (const auto& e : f.evidence) h += fmt::format("<span class=\"chip\">{} <b>{}</b></span>", esc(e.name), esc(format_evidence(e)));
      h += "</div>\n";
    }
    h += "<p>" + esc(f.explanation) + "</p>\n";
    for (const auto& s : f.sites) {
      std::string fn = s.function.empty() || s.function == "<module>" ? "" : " (" + s.function + ")";
      h += fmt::format("<div class=\"site\"><span class=\"at\">at</span> <code class=\"loc\">{}:{}</code>{}{}</div>\n", esc(s.path), s.line,
                       esc(fn), s.note.empty() ? "" : " <span class=\"meta\">" + esc(s.note) + "</span>");
      if (!s.code.empty()) h += fmt::format("<pre class=\"siteline\"><code><span class=\"lno\">{}</span> {}</code></pre>\n", s.line, esc(s.code));
      if (s.caller_line > 0) {
        std::string cfn = s.caller_function.empty() || s.caller_function == "<module>" ? "" : " (" + s.caller_function + ")";
        h += fmt::format("<div class=\"site\"><span class=\"at\">called from</span> <code class=\"loc\">{}:{}</code>{}</div>\n",
                         esc(s.caller_path), s.caller_line, esc(cfn));
        if (!s.caller_code.empty())
          h += fmt::format("<pre class=\"siteline\"><code><span class=\"lno\">{}</span> {}</code></pre>\n", s.caller_line,
                           esc(s.caller_code));
      }
    }
    h += "<div class=\"fix\"><b>Fix:</b> " + esc(f.fix) + "</div>\n";
    if (!f.fix_code.empty()) h += "<pre><code>" + esc(f.fix_code) + "</code></pre>\n";
    h += "</section>\n";
  }
}

// One chart card. trace: the index in R.traces the chart draws (-1: none, a whole-job chart);
// source "trace": the utilisation chart uses that trace's GPU busy per step even when samples exist.
// The run on one time axis, its buckets in run order, each as wide as its share of the wall time
// (plain HTML and CSS: it renders without the charts' script).
void account_html(std::string& h, const diagnose::TimeAccount& t) {
  h += fmt::format("<section class=\"panel wide\" id=\"time-account\"><h3>Where the run's {:.1f} s went</h3>\n"
                   "<div class=\"account\" role=\"img\" aria-label=\"{}\">",
                   t.total_s, esc(account_line(t)));
  for (const auto& p : account_parts(t)) {
    if (t.total_s <= 0 || p.s <= 0) continue;
    const double pct = 100 * p.s / t.total_s;
    h += fmt::format("<div class=\"acc acc-{}\" style=\"width:{:.3f}%\" title=\"{} {:.2f} s ({:.1f}%)\" data-s=\"{:.3f}\">"
                     "{}</div>",
                     p.key, pct, p.label, p.s, pct, p.s, pct >= 8 ? esc(p.label) : "");
  }
  h += "</div>\n<div class=\"legend\">";
  for (const auto& p : account_parts(t))
    h += fmt::format("<span><i class=\"acc-{}\"></i>{} {:.1f} s</span>", p.key, p.label, p.s);
  h += fmt::format("<span><b>goodput {:.0f}%</b></span></div></section>\n", t.goodput_pct);
}

void chart(std::string& h, const char* id, const std::string& title, bool wide, int trace = -1, const char* source = nullptr) {
  std::string attrs = trace >= 0 ? fmt::format(" data-trace=\"{}\"", trace) : "";
  if (source) attrs += fmt::format(" data-source=\"{}\"", source);
  h += fmt::format("<div class=\"card chart{}\"><h3>{}</h3><div data-chart=\"{}\"{}></div></div>\n", wide ? " wide" : "", esc(title), id, attrs);
}

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A tab's label: the rank as the per-rank table numbers it (the trace's own, else its position)
// and the file name, shortened (the tab's tooltip and the panel's heading have the full path).
std::string trace_label(const analysis::TraceAnalysis& t, size_t i, const std::vector<RankLine>& ranks) {
  int rank = t.parallel.rank;
  bool straggler = false;
  for (const auto& r : ranks)
    if (r.path == t.path) rank = r.rank, straggler = r.straggler;
  std::string name = base_name(t.path);
  if (name.size() > 36) name = name.substr(0, 33) + "...";
  std::string label = rank >= 0 ? fmt::format("rank {} · {}", rank, name) : name;
  if (name.empty()) label = fmt::format("trace {}", i + 1);
  return straggler ? label + " (straggler)" : label;
}

// What bounds the steps (step_bound.cpp): each class's share of step time and the steps it labels.
void bound_html(std::string& h, const analysis::TraceAnalysis& t) {
  const auto& b = t.bound;
  if (!b.present || t.steps.total_ns <= 0) return;
  static const char* kLabels[analysis::kBoundClasses] = {"GPU compute", "communication", "data loading", "CPU-bound",
                                                         "launch overhead", "kernel-to-kernel overhead", "unknown launcher"};
  h += fmt::format("<div class=\"card\" id=\"bound\"><h3>Bound by: {}</h3><table>", kLabels[b.bound_by]);
  h += "<tr><th>class</th><th class=\"n\">share of step time</th><th class=\"n\">time</th><th class=\"n\">steps labelled</th></tr>";
  for (int c = 0; c < analysis::kBoundClasses; ++c) {
    if (b.total_ns[c] == 0 && b.steps_by_label[c] == 0) continue;
    h += fmt::format("<tr><td>{}</td><td class=\"n\">{:.1f}%</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", kLabels[c],
                     t.steps.pct(b.total_ns[c]), ts::human_ns(b.total_ns[c]), b.steps_by_label[c]);
  }
  h += "</table></div>\n";
}

// GPU idle by cause (idle_by_cause.h: the terminal report's table).
void idle_by_cause_html(std::string& h, const analysis::TraceAnalysis& t) {
  const auto rows = idle_cause_rows(t);
  if (rows.empty()) return;
  const auto& a = t.gpu.attribution;
  h += fmt::format("<div class=\"card wide\" id=\"idle-by-cause\"><h3>GPU idle by cause: {} in {} gaps ({:.1f}% of the GPU's span)</h3><table>",
                   ts::human_ns(a.idle_ns), a.gaps, t.gpu.idle_pct);
  h += "<tr><th>cause</th><th class=\"n\">time</th><th class=\"n\">% of idle</th><th class=\"n\">% of step time</th>"
       "<th>largest host event</th></tr>";
  for (const auto& r : rows)
    h += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}%</td><td class=\"n\">{:.1f}%</td>"
                     "<td class=\"mono\">{}</td></tr>",
                     analysis::idle_cause_name(r.cause), ts::human_ns(r.ns), r.pct_of_idle, r.pct_of_step, esc(r.top_event));
  h += "</table></div>\n";
}

void collectives_html(std::string& h, const analysis::CollectiveStats& c) {
  if (c.count == 0) return;
  h += fmt::format("<div class=\"card\" id=\"collectives\"><h3>Collectives: {} calls, {} exposed</h3><table>", c.count,
                   ts::human_ns(c.exposed_ns));
  h += "<tr><th>collective</th><th>dtype</th><th class=\"n\">ranks</th><th class=\"n\">calls</th><th class=\"n\">bytes</th>"
       "<th class=\"n\">time</th><th class=\"n\">exposed</th><th class=\"n\">algbw</th><th class=\"n\">busbw</th></tr>";
  auto bw = [](double g) { return g > 0 ? fmt::format("{:.2f} GB/s", g) : std::string("–"); };
  for (const auto& r : c.rows)
    h += fmt::format("<tr><td class=\"mono\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                     esc(r.name), esc(r.dtype.empty() ? "?" : r.dtype), r.group_size > 0 ? std::to_string(r.group_size) : "?", r.count,
                     r.bytes >= 0 ? ts::human_bytes(r.bytes) : "?", ts::human_ns(r.time_ns), ts::human_ns(r.exposed_ns), bw(r.algbw_gbps),
                     bw(r.busbw_gbps));
  h += "</table></div>\n";
}

void tables_html(std::string& h, const analysis::TraceAnalysis& t) {
  h += "<div class=\"grid\">\n";
  const auto& g = t.gpu;
  h += "<div class=\"card\"><h3>GPU time</h3><table>";
  if (!g.present) {
    h += "<tr><td>No GPU events in this trace.</td></tr>";
  } else {
    auto row = [&](const std::string& k, const std::string& v) { h += "<tr><td>" + esc(k) + "</td><td class=\"n\">" + esc(v) + "</td></tr>"; };
    row("span", ts::human_ns(g.span_ns));
    row("busy", ts::human_ns(g.busy_ns));
    row("idle", fmt::format("{:.1f}%", g.idle_pct));
    row("compute", fmt::format("{:.1f}%", g.compute_pct));
    row("non-compute", fmt::format("{:.1f}%", g.non_compute_pct));
    row("utilisation in steps", fmt::format("{:.1f}%", g.utilization_pct));
    row("idle: host wait", ts::human_ns(g.idle_host_wait_ns));
    row("idle: kernel wait", ts::human_ns(g.idle_kernel_wait_ns));
    row("idle: other", ts::human_ns(g.idle_other_ns));
  }
  h += "</table></div>\n";

  h += "<div class=\"card\"><h3>Synchronisations</h3><table>";
  if (t.syncs.count == 0) {
    h += "<tr><td>None.</td></tr>";
  } else {
    h += fmt::format("<tr><th>kind</th><th class=\"n\">count</th><th class=\"n\">time</th></tr>");
    for (const auto& r : t.syncs.rows)
      h += fmt::format("<tr><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", esc(r.kind), r.count, ts::human_ns(r.time_ns));
    h += fmt::format("<tr><td>per step</td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.1f}% of step</td></tr>", t.syncs.per_step, t.syncs.pct_of_step);
  }
  h += "</table></div>\n";
  // Full width, after the first row's two cards (GPU time, synchronisations): no hole in the grid.
  idle_by_cause_html(h, t);

  h += "<div class=\"card\"><h3>Copies</h3><table>";
  if (t.copies.rows.empty()) {
    h += "<tr><td>None.</td></tr>";
  } else {
    h += "<tr><th>direction</th><th>memory</th><th class=\"n\">count</th><th class=\"n\">bytes</th><th class=\"n\">time</th><th class=\"n\">GB/s</th></tr>";
    for (const auto& r : t.copies.rows)
      h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}</td></tr>",
                       esc(r.direction), esc(r.kind), r.count, ts::human_bytes(r.bytes), ts::human_ns(r.time_ns), r.bandwidth_gbps);
  }
  h += "</table></div>\n";

  bound_html(h, t);
  collectives_html(h, t.collectives);

  const auto& p = t.precision;
  h += "<div class=\"card\"><h3>Precision and memory</h3><table>";
  h += fmt::format("<tr><td>GEMM/conv kernels</td><td class=\"n\">{} ({})</td></tr>", p.gemm_kernels, ts::human_ns(p.gemm_time_ns));
  for (const auto& [c, ns] : p.time_by_class_ns)
    h += fmt::format("<tr><td>&nbsp;&nbsp;{}</td><td class=\"n\">{:.1f}%</td></tr>", esc(c), p.gemm_time_ns > 0 ? 100.0 * ns / p.gemm_time_ns : 0.0);
  h += fmt::format("<tr><td>Tensor Core share of GEMM time</td><td class=\"n\">{:.1f}%</td></tr>", p.tensor_core_share_pct);
  if (t.memory.present) {
    h += fmt::format("<tr><td>peak allocated</td><td class=\"n\">{}</td></tr>", ts::human_bytes(t.memory.peak_allocated));
    h += fmt::format("<tr><td>peak reserved</td><td class=\"n\">{}</td></tr>", ts::human_bytes(t.memory.peak_reserved));
    if (t.memory.device_total > 0)
      h += fmt::format("<tr><td>device memory</td><td class=\"n\">{}</td></tr>", ts::human_bytes(t.memory.device_total));
    h += fmt::format("<tr><td>growth per step</td><td class=\"n\">{}</td></tr>", ts::human_bytes(t.memory.slope_bytes_per_step));
  } else {
    h += "<tr><td>memory</td><td class=\"n\">no CUDA [memory] events</td></tr>";
  }
  h += "</table></div>\n</div>\n";
}

}  // namespace

std::string render_html(const ReportInput& in) {
  const auto& d = in.diagnosis;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<title>trainscope report</title>\n<script>" + std::string(kHtmlErrorHook) + "</script>\n";
  h += "<style>" + std::string(kHtmlCss) + "</style>\n</head>\n<body>\n";
  std::string sub = fmt::format("trainscope {} · {} trace{}", in.command, in.traces.size(), in.traces.size() == 1 ? "" : "s");
  if (in.traces.size() == 1) {
    if (!in.traces[0].path.empty()) sub += " · " + in.traces[0].path;
    if (!in.traces[0].device_name.empty()) sub += " · " + in.traces[0].device_name;
  }
  h += "<header><h1>trainscope report</h1><div class=\"sub\">" + esc(sub) + "</div></header>\n<main>\n";
  auto top_sev = d.findings.empty() ? diagnose::Severity::Info : d.findings.front().severity;
  if (!d.findings.empty() && d.findings.front().id == "compute-bound") top_sev = diagnose::Severity::Info;
  h += fmt::format("<div class=\"verdict {}\" id=\"verdict\"><div class=\"label\">Verdict</div><div class=\"text\">{}</div>"
                   "<div class=\"scenario\"><b>{}</b>{}</div></div>\n",
                   sev_class(top_sev), esc(d.verdict), esc(diagnose::scenario_title(d.scenario)),
                   d.scenario_reason.empty() ? "" : " — " + esc(d.scenario_reason));

  if (in.agent && in.agent->time_account) account_html(h, *in.agent->time_account);
  h += "<div class=\"grid\">\n";
  bool has_series = in.samples && in.samples->series.t_s.size() > 1;
  bool several = in.traces.size() > 1;
  if (!several) {
    int t0 = in.traces.empty() ? -1 : 0;
    if (t0 == 0) chart(h, "breakdown", "Where the step time goes", true, 0);
    if (has_series || t0 == 0)
      chart(h, "util", has_series ? "GPU and CPU utilisation over time" : "GPU busy per step over time (from the trace)", true, t0);
    if (t0 == 0) chart(h, "step-bars", "Time per step, by class", true, 0);
    if (t0 == 0 && in.traces[0].timeline.bins > 0)
      chart(h, "timeline", "GPU timeline per step: busy, and why it idles (hover for the host event)", true, 0);
    chart(h, "memory", "Memory per step", true, t0);
    if (t0 == 0) chart(h, "kernels", "Top kernels by GPU time", true, 0);
  } else if (has_series) {
    chart(h, "util", "GPU and CPU utilisation over time", true);  // the whole job; each trace has its own below
  }
  if (in.ranks.size() > 1) chart(h, "ranks", "Median step time per rank", true);
  h += "</div>\n";

  if (!in.preface.empty()) {
    h += "<h2 id=\"preface\">" + esc(in.preface_title) + "</h2><div class=\"card\"><ul>";
    for (const auto& l : in.preface) h += "<li>" + esc(l) + "</li>";
    h += "</ul></div>\n";
  }

  findings_html(h, d);

  if (!in.ranks.empty()) {
    const bool arrivals = in.arrival && in.arrival->matched_calls > 0;
    const bool nodes = !in.ranks.front().node.empty();
    h += "<h2>Ranks</h2><div class=\"card\"><table><tr>";
    if (nodes) h += "<th>node</th>";
    h += "<th class=\"n\">rank</th><th class=\"n\">steps</th><th class=\"n\">median step</th>"
         "<th class=\"n\">comm/step</th><th class=\"n\">GPU idle</th><th class=\"n\">wait/step</th>";
    if (arrivals) h += "<th class=\"n\">last to arrive</th><th class=\"n\">waits in collectives/step</th>";
    h += "<th>trace</th></tr>";
    for (const auto& r : in.ranks) {
      h += fmt::format("<tr{}>{}<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}%</td>"
                       "<td class=\"n\">{}</td>",
                       r.straggler ? " style=\"color:#d32f2f;font-weight:600\"" : "", nodes ? "<td>" + esc(r.node) + "</td>" : "", r.rank, r.steps, ts::human_ns(r.median_step_ms * 1e6),
                       ts::human_ns(r.comm_ms_per_step * 1e6), r.idle_pct, ts::human_ns(r.wait_ms_per_step * 1e6));
      if (arrivals)
        h += fmt::format("<td class=\"n\">{} of {}</td><td class=\"n\">{}</td>", r.last_arrivals, in.arrival->matched_calls,
                         ts::human_ns(r.collective_wait_ms_per_step * 1e6));
      h += fmt::format("<td class=\"mono\">{}</td></tr>", esc(r.path));
    }
    h += "</table>";
    if (in.arrival && in.arrival->last_rank >= 0)
      h += fmt::format("<p id=\"arrival\">Rank {} arrives last at {} of {} matched collectives; the other ranks wait {} per step for it.</p>",
                       in.arrival->last_rank, in.arrival->last_count, in.arrival->matched_calls,
                       ts::human_ns(in.arrival->others_wait_ns_per_step));
    else if (in.arrival && !in.arrival->note.empty())
      h += "<p id=\"arrival\">Collectives: " + esc(in.arrival->note) + ".</p>";
    h += "</div>\n";
  }
  if (!several) {
    for (const auto& t : in.traces) {
      h += "<h2>Evidence: " + esc(trace_title(t.path, in.command)) + "</h2>\n";
      tables_html(h, t);
    }
  } else {
    // Every trace gets its own charts and tables: one panel per trace behind a row of tabs
    // (without the script the panels simply stack).
    h += fmt::format("<h2>Per trace ({})</h2>\n<div data-tabs role=\"tablist\">", in.traces.size());
    for (size_t i = 0; i < in.traces.size(); ++i)
      h += fmt::format("<button type=\"button\" role=\"tab\" data-tab=\"{}\" title=\"{}\">{}</button>", i, esc(in.traces[i].path),
                       esc(trace_label(in.traces[i], i, in.ranks)));
    h += "</div>\n";
    for (size_t i = 0; i < in.traces.size(); ++i) {
      const auto& t = in.traces[i];
      int ti = static_cast<int>(i);
      h += fmt::format("<section class=\"panel\" id=\"trace-{}\" role=\"tabpanel\">\n<h3 class=\"path\">{}{}</h3>\n<div class=\"grid\">\n", i,
                       esc(t.path), t.device_name.empty() ? "" : " · " + esc(t.device_name));
      chart(h, "breakdown", "Where the step time goes", true, ti);
      chart(h, "util", "GPU busy per step over time (from the trace)", true, ti, "trace");
      chart(h, "step-bars", "Time per step, by class", true, ti);
      if (t.timeline.bins > 0)
        chart(h, "timeline", "GPU timeline per step: busy, and why it idles (hover for the host event)", true, ti);
      chart(h, "memory", "Memory per step", true, ti);
      chart(h, "kernels", "Top kernels by GPU time", true, ti);
      h += "</div>\n";
      tables_html(h, t);
      h += "</section>\n";
    }
  }
  h += "<footer>Generated by trainscope 0.1.0 · self-contained: no network needed</footer>\n</main>\n";
  h += "<script type=\"application/json\" id=\"ts-data\">" + script_safe(render_json(in, false)) + "</script>\n";
  h += "<script>" + std::string(kHtmlChartsJs) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace ts::report
