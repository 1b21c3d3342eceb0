// trainscope report RUN: show a stored run again (its diagnosis and step summary), or a stored
// lab/loader/max-batch result (its outcome and findings), or what a watch recording holds.
#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.h"
#include "report/report.h"
#include "run/run_store.h"
#include "util/error.h"

namespace ts::cli {
namespace {
struct ReportArgs {
  std::string run, store_path;
  bool json = false, html = false;
};
}  // namespace

void register_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  auto* sub = app.add_subcommand("report", "Show a stored run (or lab/loader/max-batch result) again");
  sub->footer(
      "A run shows its report (verdict, findings, evidence); a lab, loader or max-batch result its outcome and\n"
      "findings (--json: every measurement); a watch recording what it holds. --html: runs only.");
  sub->add_option("run", a->run, "Id (from `trainscope runs`), 'last' (the newest run), or a run's output directory")->required();
  sub->add_option("--store", a->store_path, "Run store (SQLite) path");
  sub->add_flag("--json", a->json, "Print the stored JSON (a run's report.json, an experiment's result)");
  sub->add_flag("--html", a->html, "Print the run's report.html (one self-contained page with charts)");
  sub->callback([a] {
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
