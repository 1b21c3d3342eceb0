// trainscope report RUN: show a stored run again (its diagnosis and step summary), or a stored
// lab/loader/max-batch result (its outcome and findings), or what a watch recording holds.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "cli/commands.h"
#include "report/report.h"
#include "run/job_merge.h"
#include "run/job_report.h"
#include "run/run_store.h"
#include "util/error.h"

namespace ts::cli {
namespace {
struct ReportArgs {
  std::string run, store_path;
  bool json = false, html = false;
};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A job directory (`trainscope run --job-dir DIR` on every node): one report for the whole job.
void report_job(const ReportArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO);
  bool shown = false;
  auto progress = [&](size_t done, size_t total) {
    if (globals().quiet || std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) return;
    if (done != total && done % 16 != 0) return;
    shown = true;
    fmt::print(stderr, "{}report: {} of {} nodes read{}", tty ? "\r\033[K" : "", done, total, tty ? "" : "\n");
    std::fflush(stderr);
  };
  ts::run::JobView v = ts::run::merge_job_dir(a.run, unix_now(), progress);
  if (shown && tty) fmt::print(stderr, "\n");
  // What is wrong with the directory goes to stderr too, one line each, whatever the format.
  if (!globals().quiet)
    for (const auto& p : v.problems) fmt::print(stderr, "trainscope: report: {}\n", p);
  if (a.html) {
    fmt::print("{}", ts::run::job_report_html(v));
  } else if (a.json) {
    fmt::print("{}", ts::run::job_report_json(v));
  } else {
    fmt::print("{}", ts::run::job_report_text(v, report::detect_terminal(fileno(stdout), globals().no_color)));
  }
}
}  // namespace

void register_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  auto* sub = app.add_subcommand("report", "Show a stored run (or lab/loader/max-batch result) again");
  sub->footer(
      "A run shows its report (verdict, findings, evidence); a lab, loader or max-batch result its outcome and\n"
      "findings (--json: every measurement); a watch recording what it holds. --html: runs and jobs only.\n"
      "A job directory (trainscope run --job-dir DIR on every node) gives one report for the job: every rank of every\n"
      "node, the straggler by node and rank with its node's own evidence, differences between nodes, the job's step\n"
      "as its slowest node sets it; a node missing, still running, two jobs mixed, a cut-off write or clocks that\n"
      "disagree are one line each on stderr and in the report (docs/MULTINODE.md).");
  sub->add_option("run", a->run,
                  "Id (from `trainscope runs`), 'last' (the newest run), a run's output directory, or a job directory "
                  "(run --job-dir on every node: one report for the job)")->required();
  sub->add_option("--store", a->store_path, "Run store (SQLite) path");
  sub->add_flag("--json", a->json, "Print the stored JSON (a run's report.json, an experiment's result)");
  sub->add_flag("--html", a->html, "Print the run's report.html (one self-contained page with charts)");
  sub->callback([a] {
    if (ts::run::is_job_dir(a->run)) {
      report_job(*a);
      return;
    }
    if (a->html) {
      fmt::print("{}", ts::run::show_run_html(a->store_path, a->run));
      return;
    }
    std::string text = ts::run::show_run_text(a->store_path, a->run, a->json, isatty(fileno(stdout)) && !globals().no_color);
    // A stored report.txt is 100 columns wide: narrower terminals get it re-wrapped.
    if (!a->json) text = report::fit_lines(text, report::detect_terminal(fileno(stdout), globals().no_color).width);
    fmt::print("{}", text);
  });
}

}  // namespace ts::cli
