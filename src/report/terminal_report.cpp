// Terminal report: the verdict first, then the findings (evidence, why, fix), then the evidence
// tables. Colour and the terminal's width on a TTY; plain 100-column text otherwise.
#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "report/idle_by_cause.h"
#include "report/report.h"
#include "report/text_helpers.h"
#include "report/time_account_view.h"
#include "util/format.h"

namespace ts::report {
namespace {

struct Out {
  TerminalStyle st;
  std::string s;
  std::string c(const char* code, const std::string& text) const {
    return st.color ? fmt::format("\033[{}m{}\033[0m", code, text) : text;
  }
  // Trailing spaces dropped: an empty bar or cell leaves none at the end of a line.
  void line(const std::string& l = "") {
    size_t end = l.find_last_not_of(' ');
    s.append(l, 0, end == std::string::npos ? 0 : end + 1);
    s += '\n';
  }
  void heading(const std::string& h) {
    line();
    line(c("1;4", fit(h, st.width)));
  }
  void para(const std::string& text, int indent, const std::string& first_prefix = "") {
    std::string pad(indent, ' ');
    auto lines = wrap(text, st.width - indent - int(display_width(first_prefix)));
    for (size_t i = 0; i < lines.size(); ++i)
      line(pad + (i == 0 ? first_prefix : std::string(display_width(first_prefix), ' ')) + lines[i]);
  }
};

const char* sev_color(diagnose::Severity s) {
  switch (s) {
    case diagnose::Severity::Critical: return "1;41;97";
    case diagnose::Severity::High: return "1;31";
    case diagnose::Severity::Medium: return "1;33";
    case diagnose::Severity::Low: return "1;36";
    default: return "1;32";
  }
}

const char* bound_label(int c) {
  static const char* kLabels[analysis::kBoundClasses] = {"GPU compute",     "communication",
                                                         "data loading",    "CPU-bound",
                                                         "launch overhead", "kernel-to-kernel overhead",
                                                         "unknown launcher"};
  return c >= 0 && c < analysis::kBoundClasses ? kLabels[c] : "–";
}

std::string bar(double pct, int width) {
  int full = static_cast<int>(std::clamp(pct, 0.0, 100.0) / 100 * width * 8 + 0.5);
  static const char* parts[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string b;
  for (int i = 0; i < full / 8; ++i) b += "█";
  b += parts[full % 8];
  return b;
}

void findings(Out& o, const ReportInput& in) {
  const auto& fs = in.diagnosis.findings;
  o.heading(fmt::format("FINDINGS ({})", fs.size()));
  if (fs.empty()) o.line("  none");
  int i = 0;
  for (const auto& f : fs) {
    ++i;
    o.line();
    std::string sev = fmt::format("[{}]", diagnose::severity_name(f.severity));
    for (auto& ch : sev) ch = std::toupper(static_cast<unsigned char>(ch));
    o.line(fmt::format("{:>3}. {} {}  {}", i, o.c(sev_color(f.severity), sev), o.c("1", f.id),
                       o.c("2", fmt::format("confidence {:.0f}% · from {}", f.confidence * 100, f.source))));
    o.para(f.title, 5);
    if (!f.gain.empty()) o.para(f.gain, 5, o.st.color ? "gain: " : "gain: ");
    std::string ev;
    for (const auto& e : f.evidence) ev += (ev.empty() ? "" : " · ") + e.name + " " + format_evidence(e);
    if (!ev.empty()) o.para(ev, 5, "evidence: ");
    o.para(f.explanation, 5, "why: ");
    for (const auto& s : f.sites) {
      // The user's own line: path:line (function), its text under a bar, what it does there.
      std::string where = fmt::format("{}:{}", s.path, s.line);
      if (!s.function.empty() && s.function != "<module>") where += " (" + s.function + ")";
      o.para(where + (s.note.empty() ? "" : " · " + s.note), 5, "at: ");
      if (!s.code.empty()) o.line("       " + o.c("33", "│ " + s.code));
      if (s.caller_line > 0) {
        std::string from = fmt::format("{}:{}", s.caller_path, s.caller_line);
        if (!s.caller_function.empty() && s.caller_function != "<module>") from += " (" + s.caller_function + ")";
        o.para(from, 5, "called from: ");
        if (!s.caller_code.empty()) o.line("       " + o.c("33", "│ " + s.caller_code));
      }
    }
    o.para(f.fix, 5, "fix: ");
    if (!f.fix_code.empty()) {
      size_t start = 0;
      while (start <= f.fix_code.size()) {
        size_t nl = f.fix_code.find('\n', start);
        std::string l = f.fix_code.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        // A code line wider than the terminal breaks after a space, the rest indented under the
        // bar (the fixes' long lines are argument lists, which Python lets continue).
        size_t room = size_t(std::max(20, o.st.width - 9));
        std::string cont;
        while (display_width(cont + l) > room) {
          size_t cut = l.rfind(' ', room - cont.size());
          if (cut == std::string::npos || cut <= l.find_first_not_of(' ')) break;
          o.line("       " + o.c("36", "│ " + cont + l.substr(0, cut)));
          l = l.substr(cut + 1);
          if (cont.empty()) cont = std::string(l.empty() ? 0 : std::min<size_t>(4, room / 4), ' ');
        }
        o.line("       " + o.c("36", "│ " + cont + l));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    if (!f.fix_settings.empty()) {
      std::string set;
      for (const auto& [k, v] : f.fix_settings) set += " --set " + k + "=" + v;
      // Patchable: a line of the user's code the fix is written at (verify --patch, patch_plan.h).
      const diagnose::SiteRef* at = nullptr;
      for (const auto& s : f.sites)
        if (!s.outside_code && (s.role == "dataloader" || s.role == "optimizer" || s.role == "forward" ||
                                s.role == "config" || s.role == "h2d")) {
          at = &s;
          break;
        }
      if (f.recoverable_fraction <= 0)  // a note: the setting is the claim to check, not a fix
        o.para("trainscope verify -- ... runs the script with" + set + " beside it as it is, and measures the claim", 5,
               "check: ");
      else if (f.outside_step)  // its time is the run's, not the steps' verify measures
        o.para("trainscope run" + set + " -- ... applies it without editing the script; trainscope compare BEFORE "
                   "AFTER sets the two runs' accounts of where the time went side by side",
               5, "try: ");
      else
        o.para("trainscope run" + set + " -- ... applies it without editing the script; " +
                   (at ? fmt::format("trainscope verify --patch fix.diff -- ... measures it and writes it into your "
                                     "code ({}:{}) as a patch",
                                     at->path, at->line)
                       : std::string("trainscope verify -- ... measures it")),
               5, "try: ");
    }
  }
}

// GPU idle by cause (idle_attribution.cpp; rows from idle_by_cause.h): every cause with time,
// largest first, its share of the idle time and of the step time, and its largest host event.
void idle_by_cause_table(Out& o, const analysis::TraceAnalysis& t) {
  const auto rows = idle_cause_rows(t);
  if (rows.empty()) return;
  const auto& a = t.gpu.attribution;
  o.heading(fmt::format("GPU idle by cause ({} idle in {} gaps, {:.1f}% of the GPU's span)", ts::human_ns(a.idle_ns), a.gaps,
                        t.gpu.idle_pct));
  const int ew = std::max(20, o.st.width - 52);
  o.line(o.c("2", fmt::format("  {:<20}{:>10} {:>7} {:>7}  {}", "cause", "time", "idle", "step", "largest host event")));
  for (const auto& r : rows)
    o.line(fmt::format("  {:<20}{:>10} {:>6.1f}% {:>6.1f}%  {}", analysis::idle_cause_name(r.cause), ts::human_ns(r.ns),
                       r.pct_of_idle, r.pct_of_step, fit(r.top_event, ew)));
}

// What bounds the steps: every class's share of step time and how many steps it labels.
void bound_table(Out& o, const analysis::TraceAnalysis& t) {
  const auto& b = t.bound;
  if (!b.present || t.steps.total_ns <= 0) return;
  o.heading(fmt::format("Bound by (per step: the class with the most time) — {}", bound_label(b.bound_by)));
  o.line(o.c("2", fmt::format("  {:<24}{:>7} {:>10} {:>7}", "class", "share", "time", "steps")));
  const int bw = std::max(10, o.st.width - 52);
  for (int c = 0; c < analysis::kBoundClasses; ++c) {
    if (b.total_ns[c] == 0 && b.steps_by_label[c] == 0) continue;
    const double pct = t.steps.pct(b.total_ns[c]);
    o.line(fmt::format("  {:<24}{:>6.1f}% {:>10} {:>7}  {}", bound_label(c), pct, ts::human_ns(b.total_ns[c]),
                       b.steps_by_label[c], o.c(c == analysis::kBoundGpuCompute ? "32" : "34", bar(pct, bw))));
  }
}

void collectives_table(Out& o, const analysis::CollectiveStats& c) {
  if (c.count == 0) return;
  o.heading(fmt::format("Collectives ({} calls, {} on the GPU, {} exposed)", c.count, ts::human_ns(c.time_ns),
                        ts::human_ns(c.exposed_ns)));
  o.line(o.c("2", fmt::format("  {:<18} {:<9} {:>5} {:>6} {:>10} {:>10} {:>10} {:>11} {:>11}", "collective", "dtype",
                              "ranks", "calls", "bytes", "time", "exposed", "algbw", "busbw")));
  for (const auto& r : c.rows) {
    auto bw = [](double g) { return g > 0 ? fmt::format("{:.2f} GB/s", g) : std::string("–"); };
    o.line(fmt::format("  {:<18} {:<9} {:>5} {:>6} {:>10} {:>10} {:>10} {:>11} {:>11}", fit(r.name, 18),
                       fit(r.dtype.empty() ? "?" : r.dtype, 9), r.group_size > 0 ? std::to_string(r.group_size) : "?",
                       r.count, r.bytes >= 0 ? ts::human_bytes(r.bytes) : "?", ts::human_ns(r.time_ns),
                       ts::human_ns(r.exposed_ns), bw(r.algbw_gbps), bw(r.busbw_gbps)));
  }
  if (c.with_params < c.count)
    o.para(fmt::format("{} of {} calls have no recorded sizes (record_param_comms without args): no bandwidth for them",
                       c.count - c.with_params, c.count), 2);
}

void trace_tables(Out& o, const analysis::TraceAnalysis& t, const std::string& command, int top, bool several) {
  const auto& st = t.steps;
  o.heading("TRACE " + trace_title(t.path, command));
  o.para(fmt::format("{}{} events, {} step{}{}, median step {}, read {:.2f} s + analysed {:.2f} s",
                     t.device_name.empty() ? "" : t.device_name + " · ", t.events, st.steps.size(),
                     st.steps.size() == 1 ? "" : "s",
                     st.synthetic ? " (no ProfilerStep#: whole trace as one step)" : "",
                     ts::human_ns(st.median_step_ns), t.read_seconds, t.analyse_seconds), 2);
  for (const auto& w : t.warnings) o.para(w, 2, "warning: ");

  o.heading("Step time breakdown");
  const int64_t vals[] = {st.total.kernel, st.total.memcpy, st.total.memset, st.total.communication,
                          st.total.runtime, st.total.dataloader, st.total.cpu_exec, st.total.other};
  int bw = std::max(10, o.st.width - 40);
  for (int i = 0; i < 8; ++i) {
    double pct = st.pct(vals[i]);
    o.line(fmt::format("  {:<14}{:>6.1f}% {:>10}  {}", breakdown_labels()[i], pct, ts::human_ns(vals[i]),
                       o.c(i == 0 ? "32" : (i == 5 ? "31" : "34"), bar(pct, bw))));
  }

  const auto& g = t.gpu;
  o.heading("GPU time");
  if (!g.present) {
    o.line("  no GPU events in this trace");
  } else {
    o.para(fmt::format("span {} · busy {} · idle {:.1f}% · compute {:.1f}% · non-compute {:.1f}% · utilisation in steps {:.1f}%",
                       ts::human_ns(g.span_ns), ts::human_ns(g.busy_ns), g.idle_pct, g.compute_pct, g.non_compute_pct,
                       g.utilization_pct), 2);
    o.para(fmt::format("idle: host wait {} · kernel wait {} · other {}", ts::human_ns(g.idle_host_wait_ns),
                       ts::human_ns(g.idle_kernel_wait_ns), ts::human_ns(g.idle_other_ns)), 2);
    // Kineto's estimates, each only when the trace has it (-1 = absent, never printed).
    std::string est;
    if (g.est_sm_efficiency_pct >= 0) est = fmt::format("est. SM efficiency {:.1f}%", g.est_sm_efficiency_pct);
    if (g.est_occupancy_pct >= 0)
      est += fmt::format("{}est. occupancy {:.1f}%", est.empty() ? "" : " · ", g.est_occupancy_pct);
    if (!est.empty()) o.line("  " + est);
  }

  idle_by_cause_table(o, t);
  bound_table(o, t);
  collectives_table(o, t.collectives);

  const auto& k = t.kernels;
  if (k.count > 0) {
    o.heading(fmt::format("Top kernels ({} kernels, {:.0f} per step, median {}, {:.0f}% under 10 µs)", k.count, k.per_step,
                          ts::human_ns(k.median_ns), k.under_10us_pct));
    int nw = std::max(20, o.st.width - 36);
    o.line(o.c("2", fmt::format("  {:>6} {:>8} {:>10}  {}", "share", "count", "total", "name")));
    for (size_t i = 0; i < k.top.size() && int(i) < top; ++i) {
      const auto& r = k.top[i];
      o.line(fmt::format("  {:>5.1f}% {:>8} {:>10}  {}", r.share_pct, r.count, ts::human_ns(r.total_ns), fit(r.name, nw)));
    }
    if (k.launch.launches > 0)
      o.para(fmt::format("launches {} · median launch delay {} · short kernels {} · runtime outliers {}", k.launch.launches,
                         ts::human_ns(k.launch.median_launch_delay_ns), k.launch.short_kernels, k.launch.runtime_outliers), 2);
  }

  if (!t.copies.rows.empty()) {
    o.heading("Copies");
    o.line(o.c("2", fmt::format("  {:<8} {:<10} {:>8} {:>11} {:>10} {:>11}", "dir", "memory", "count", "bytes", "time", "bandwidth")));
    for (const auto& r : t.copies.rows)
      o.line(fmt::format("  {:<8} {:<10} {:>8} {:>11} {:>10} {:>11}", r.direction, r.kind, r.count, ts::human_bytes(r.bytes),
                         ts::human_ns(r.time_ns), fmt::format("{:.1f} GB/s", r.bandwidth_gbps)));
    if (t.copies.blocking_memcpy_calls > 0) o.line(fmt::format("  blocking cudaMemcpy calls: {}", t.copies.blocking_memcpy_calls));
  }

  const auto& sy = t.syncs;
  o.heading("Synchronisations");
  if (sy.count == 0) {
    o.line("  none");
  } else {
    o.para(fmt::format("{} in all, {:.1f} per step, {} per step ({:.1f}% of step time), .item() calls {}", sy.count,
                       sy.per_step, ts::human_ns(sy.time_per_step_ns), sy.pct_of_step, sy.item_calls), 2);
    for (const auto& r : sy.rows) o.line(fmt::format("  {:<32} {:>8} {:>10}", fit(r.kind, 32), r.count, ts::human_ns(r.time_ns)));
  }

  const auto& m = t.memory;
  o.heading("Memory");
  if (!m.present) {
    o.line("  no CUDA [memory] events (profile_memory=True records them on a GPU; a CPU's are not analysed)");
  } else {
    o.para(fmt::format("peak allocated {} · peak reserved {}{} · growth {} per step{}", ts::human_bytes(m.peak_allocated),
                       m.peak_reserved > 0 ? ts::human_bytes(m.peak_reserved) : std::string("unknown"),
                       m.device_total > 0 ? fmt::format(" ({:.0f}% of {})", m.peak_reserved_pct_of_device, ts::human_bytes(m.device_total)) : "",
                       ts::human_bytes(m.slope_bytes_per_step), m.relative ? " (relative to the trace's start)" : ""), 2);
  }

  const auto& p = t.precision;
  if (p.gemm_kernels > 0) {
    o.heading("Precision");
    std::string cls;
    for (const auto& [c, ns] : p.time_by_class_ns)
      cls += fmt::format("{}{} {:.0f}%", cls.empty() ? "" : " · ", c, p.gemm_time_ns > 0 ? 100.0 * ns / p.gemm_time_ns : 0.0);
    o.para(fmt::format("GEMM/conv kernels {} ({}) · Tensor Cores {:.1f}% of GEMM time · compute capability {}", p.gemm_kernels,
                       ts::human_ns(p.gemm_time_ns), p.tensor_core_share_pct,
                       p.compute_capability > 0 ? fmt::format("{:.1f}", p.compute_capability / 10.0) : "unknown"), 2);
    if (!cls.empty()) o.para(cls, 2, "by precision: ");
  }
  (void)several;
}

}  // namespace

TerminalStyle detect_terminal(int fd, bool no_color) {
  TerminalStyle st;
  bool tty = isatty(fd);
  st.color = tty && !no_color && !std::getenv("NO_COLOR");
  if (const char* t = std::getenv("TERM"); t && std::string(t) == "dumb") st.color = false;
  st.width = 100;
  if (tty) {
    winsize ws{};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) st.width = std::min<int>(ws.ws_col, 160);
  }
  // COLUMNS is set on purpose (shells do not export it): it wins, piped or not.
  if (const char* c = std::getenv("COLUMNS")) {
    int n = std::atoi(c);
    if (n >= 40) st.width = std::min(n, 160);
  }
  return st;
}

std::string render_terminal(const ReportInput& in, const TerminalStyle& style) {
  Out o{style, {}};
  const auto& d = in.diagnosis;
  o.para(d.verdict, 0, o.c("1;7", " VERDICT ") + " ");
  o.para(std::string(diagnose::scenario_title(d.scenario)) + (d.scenario_reason.empty() ? "" : " — " + d.scenario_reason), 0,
         o.c("1", "scenario: "));
  if (!in.preface.empty()) {
    o.heading(in.preface_title);
    for (const auto& l : in.preface) o.para(l, 2, "- ");
  }
  if (in.agent && in.agent->time_account) {
    // Where the whole run's time went, before the findings that rank the step's time and the run's.
    const auto& t = *in.agent->time_account;
    o.heading(fmt::format("WHERE THE RUN'S {:.1f} s WENT", t.total_s));
    o.line("  [" + account_strip(t, std::clamp(o.st.width - 6, 10, 72)) + "]");
    o.para(account_line(t), 2);
    std::string key;  // "s start-up · c compile · ...", the strip's own glyphs
    for (const auto& p : account_parts(t)) key += fmt::format("{}{} {}", key.empty() ? "" : " · ", p.glyph, p.label);
    for (const auto& l : wrap(key, o.st.width - 2)) o.line(o.c("2", "  " + l));
  }
  findings(o, in);
  if (!in.ranks.empty()) {
    o.heading(fmt::format("RANKS ({} traces)", in.ranks.size()));
    o.line(o.c("2", fmt::format("  {:>5} {:>6} {:>12} {:>12} {:>8} {:>12}  {}", "rank", "steps", "median step", "comm/step",
                                "idle", "wait/step", "path")));
    for (const auto& r : in.ranks)
      o.line(fmt::format("  {:>5} {:>6} {:>12} {:>12} {:>7.1f}% {:>12}  {}{}", r.rank, r.steps, ts::human_ns(r.median_step_ms * 1e6),
                         ts::human_ns(r.comm_ms_per_step * 1e6), r.idle_pct, ts::human_ns(r.wait_ms_per_step * 1e6),
                         fit(r.path, std::max(10, o.st.width - 66 - (r.straggler ? 15 : 0))),
                         r.straggler ? o.c("1;31", "  ← straggler") : ""));
    if (in.arrival) {
      const auto& a = *in.arrival;
      if (a.last_rank >= 0)
        o.para(fmt::format("collectives: rank {} arrives last in {} of {} matched calls; the others wait {} per step for it",
                           a.last_rank, a.last_count, a.matched_calls, ts::human_ns(a.others_wait_ns_per_step)), 2);
      else if (!a.note.empty())
        o.para("collectives: " + a.note, 2);
    }
  }
  for (const auto& t : in.traces) trace_tables(o, t, in.command, in.top, in.traces.size() > 1);
  if (in.samples) {
    const auto& s = *in.samples;
    o.heading("Samples");
    if (s.nvml)
      o.para(fmt::format("GPU utilisation mean {:.0f}% (p10 {:.0f}%, p90 {:.0f}%), pattern {}", s.gpu_util_mean_pct,
                         s.gpu_util_p10_pct, s.gpu_util_p90_pct, s.gpu_pattern.empty() ? "unknown" : s.gpu_pattern), 2);
    else
      o.line("  no NVIDIA driver: GPU not sampled");
    if (s.host_cpu_mean_pct >= 0)
      o.para(fmt::format("host CPU mean {:.0f}% of {} cores · job processes {:.0f}% (100 = one core)", s.host_cpu_mean_pct,
                         s.cpu_cores, s.process_tree_cpu_mean_pct), 2);
  }
  // Tables and code lines are laid out for the width already; this catches what still is not
  // (a long kernel name in a code line, a path), so no line runs past the terminal's edge.
  return fit_lines(o.s, o.st.width);
}

}  // namespace ts::report
