// trainscope analyze PATH...: read profiler traces, analyse them, diagnose, report.
// Wiring only: trace::read_trace -> analysis::analyse (threads for several traces) ->
// diagnose::diagnose (merged across ranks) -> report::render_*.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "analysis/trace_analysis.h"
#include "cli/commands.h"
#include "cli/option_values.h"
#include "diagnose/diagnose.h"
#include "report/report.h"
#include "run/rank_summary.h"
#include "trace/reader.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace ts::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A progress line on stderr, shown only once the work has taken more than a second.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO)), start_(Clock::now()) {}
  void update(const std::string& text) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (shown_ && now - last_ < (tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000))) return;
    last_ = now;
    shown_ = true;
    if (tty_)
      fmt::print(stderr, "\r\033[K{}", text);
    else
      fmt::print(stderr, "{}\n", text);
    std::fflush(stderr);
  }
  void finish(const std::string& text) {
    if (!enabled_ || !shown_) return;
    if (tty_)
      fmt::print(stderr, "\r\033[K{}\n", text);
    else
      fmt::print(stderr, "{}\n", text);
  }

 private:
  bool enabled_, tty_, shown_ = false;
  Clock::time_point start_, last_;
};

// A trace's rank as the per-rank table has it (distributedInfo, file name or position).
int rank_of(const analysis::MultiTraceAnalysis& m, const std::string& path) {
  for (const auto& r : m.ranks)
    if (r.path == path) return r.rank;
  return -1;
}

analysis::MultiTraceAnalysis analyse_all(const std::vector<std::string>& given, const analysis::AnalyseOptions& opt,
                                          int threads, int read_threads, Progress& progress) {
  bool job_dir = false;
  std::vector<std::string> paths = analysis::expand_trace_paths(given, &job_dir);
  if (paths.size() == 1) {
    // One trace: report reading progress within the file.
    const std::string& p = paths[0];
    trace::ReadOptions ro;
    ro.threads = read_threads;
    auto t0 = Clock::now();
    ro.progress = [&](uint64_t raw, uint64_t comp, uint64_t size) {
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      progress.update(fmt::format("analyze: reading {}: {:.0f}% ({:.0f} MB of JSON, {:.0f} MB/s)", p,
                                  size ? 100.0 * comp / size : 0.0, raw / 1e6, s > 0 ? raw / 1e6 / s : 0.0));
    };
    trace::EventStore store = trace::read_trace(p, ro);
    double read_s = std::chrono::duration<double>(Clock::now() - t0).count();
    progress.update(fmt::format("analyze: analysing {} ({} events)", p, store.events_read()));
    analysis::TraceAnalysis a = analysis::analyse(store, opt);
    a.path = p;
    a.read_seconds = read_s;
    std::vector<analysis::TraceAnalysis> v;
    v.push_back(std::move(a));
    return analysis::compare_ranks(std::move(v));
  }
  std::vector<std::string> left_out;
  auto m = analysis::analyse_traces(
      paths, opt, threads,
      [&](size_t done, size_t total) { progress.update(fmt::format("analyze: {} of {} traces analysed", done, total)); },
      job_dir ? &left_out : nullptr);
  for (const auto& s : left_out) fmt::print(stderr, "trainscope: analyze: {}\n", s);
  return m;
}

}  // namespace

// A one-shot command that allocates and frees hundreds of MB: freed blocks stay in the heap for
// the next allocation instead of going back to the kernel, which would zero fresh pages again
// on their first touch. Blocks up to 64 MiB come from the heap, and the heap is not trimmed, so
// the analysis's lists (a few MB to tens of MB each) reuse the pages the read's chunk stores
// freed. On the 2-core benchmark VM, where a fresh page costs 2-4 us, the 507 MB recommender
// trace took 0.623 -> 0.592 s plain (medians of 14 alternated runs, against 4 MiB); gzipped the
// gain was 3-9% in four series of 7-12 runs and none in a 16-run one, and its peak RSS went from
// 192 to 257 MB (0.51x the JSON): the inflater's pooled buffers stay in the heap (mapping them
// instead returned those 60 MB but measured slower); docs/BENCHMARKS.md, session 8.
static void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void register_analyze(CLI::App& app) {
  struct Opts {
    std::vector<std::string> paths;
    bool json = false;
    std::string md, html, steps;
    int top = 10, threads = 0, read_threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("analyze", "Read PyTorch profiler traces and say where every step's time goes and what to change");
  cmd->footer(
      "PATH is a trace (.json or .json.gz, any Kineto/Chrome-trace form) or a directory of them (one per rank:\n"
      "analysed in parallel, with a per-rank table). The report starts with the verdict, then the findings\n"
      "(evidence, explanation, fix, estimated gain), then the evidence tables. docs/FINDINGS.md lists every\n"
      "finding and its threshold; docs/SCHEMA.md the --json schema.\n"
      "Exit status: 0 when the traces were analysed (whatever was found), 1 on a bad file, 2 on a bad argument.");
  cmd->add_option("PATH", o->paths, "Trace files or directories")->required();
  cmd->add_flag("--json", o->json, "Print the JSON report (schema trainscope.report/2) instead of the text report");
  cmd->add_option("--md", o->md, "Also write a Markdown report to FILE");
  cmd->add_option("--html", o->html, "Also write a self-contained HTML report with charts to FILE");
  cmd->add_option("--steps", o->steps, "Only these steps: N, A-B, A- or -B (ProfilerStep numbers, inclusive)")
      ->check(step_range());
  cmd->add_option("--top", o->top, "Rows in the top-kernel tables")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--read-threads", o->read_threads,
                  "Threads that parse one trace (default 0: one per core; 1: serially)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--threads", o->threads, "Traces analysed at once (default: one per core, fewer when their estimated memory would not fit; one trace is read on every core)")->check(CLI::Range(0, 256));
  cmd->callback([o] {
    keep_freed_memory();
    analysis::AnalyseOptions opt;
    opt.top = o->top;
    if (!o->steps.empty()) {
      const StepRange r = step_range_value(o->steps);
      opt.first_step = r.first, opt.last_step = r.last;
    }
    Progress progress(!globals().quiet);
    analysis::MultiTraceAnalysis m = analyse_all(o->paths, opt, o->threads, o->read_threads, progress);
    progress.finish(fmt::format("analyze: {} trace{} analysed", m.traces.size(), m.traces.size() == 1 ? "" : "s"));
    // Several traces: whether they are the ranks of one job decides what comparing them means.
    if (m.traces.size() > 1 && !globals().quiet)
      fmt::print(stderr, "trainscope: analyze: {} traces, {}{}\n", m.traces.size(), m.one_job ? "one job: " : "", m.job_basis);

    // Ranks side by side (busy vs waiting in collectives): the straggler-rank finding goes with
    // the straggler's own trace.
    std::optional<diagnose::RanksEvidence> ranks_ev = run::ranks_from_traces(m);
    std::vector<diagnose::Diagnosis> parts;
    std::vector<std::string> labels;
    for (size_t i = 0; i < m.traces.size(); ++i) {
      diagnose::Evidence ev;
      ev.trace = m.traces[i];
      if (ranks_ev && ranks_ev->straggler_rank >= 0 && ranks_ev->straggler_rank == rank_of(m, m.traces[i].path))
        ev.ranks = ranks_ev;
      parts.push_back(diagnose::diagnose(ev));
      // Ranks of one job are named by rank; separate runs by their file.
      labels.push_back(m.one_job ? fmt::format("rank {}", rank_of(m, m.traces[i].path))
                                 : std::filesystem::path(m.traces[i].path).filename().string());
    }
    report::ReportInput in;
    in.command = "analyze";
    in.top = o->top;
    in.diagnosis = diagnose::merge(parts, labels);
    in.traces = std::move(m.traces);
    if (in.traces.size() > 1) {
      JsonWriter rel(false);
      rel.begin_object().field("one_job", m.one_job).field("basis", m.job_basis).end_object();
      in.extra_sections.emplace_back("traces_relation", rel.take());
    }
    if (m.one_job && m.ranks.size() >= 2) {
      for (const auto& r : m.ranks) {
        in.ranks.push_back({r.path, r.rank, r.steps, r.median_step_ns / 1e6, r.comm_ns_per_step / 1e6, r.idle_pct,
                            r.wait_ns_per_step / 1e6, r.straggler});
        // A job directory's trace: its node is the folder that holds it beside a node.json.
        if (std::filesystem::exists(std::filesystem::path(r.path).parent_path() / "node.json"))
          in.ranks.back().node = std::filesystem::path(r.path).parent_path().filename().string();
        if (m.arrival.matched_calls > 0) {
          in.ranks.back().last_arrivals = r.last_arrivals;
          in.ranks.back().collective_wait_ms_per_step = r.collective_wait_ns_per_step / 1e6;
        }
      }
      in.arrival = m.arrival;
    }
    if (ranks_ev)
      for (auto& line : in.ranks)
        for (const auto& x : ranks_ev->ranks)
          if (x.rank == line.rank) {
            line.data_wait_ms = x.data_wait_ms;
            line.busy_ms = x.busy_ms;
            line.wait_ms_per_step = x.wait_ms;  // the same definitions as the straggler-rank finding
            line.straggler = x.straggler;
          }

    if (!o->md.empty()) report::write_file(o->md, report::render_markdown(in));
    if (!o->html.empty()) report::write_file(o->html, report::render_html(in));
    if (o->json)
      fmt::print("{}", report::render_json(in));
    else
      fmt::print("{}", report::render_terminal(in, report::detect_terminal(STDOUT_FILENO, globals().no_color)));
    std::fflush(stdout);
  });
}

}  // namespace ts::cli
