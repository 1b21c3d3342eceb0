// trainscope runs: what the store holds, newest first: runs, lab/loader/max-batch results, watch recordings.
#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>

#include "cli/commands.h"
#include "report/report.h"
#include "run/run_store.h"
#include "util/error.h"

namespace ts::cli {
namespace {
struct RunsArgs {
  std::string store_path, kind;
  int limit = 20;
  bool json = false;
};
}  // namespace

void register_runs(CLI::App& app) {
  auto a = std::make_shared<RunsArgs>();
  auto* sub = app.add_subcommand("runs", "List what the run store holds (runs, lab/loader/max-batch results, watch recordings), newest first");
  sub->footer(
      "KIND is run (trainscope run: verdict), lab, loader, max-batch (their outcome), or watch (hardware samples only).\n"
      "`trainscope report ID` shows any of them again.");
  sub->add_option("--store", a->store_path, "Run store (SQLite) path");
  sub->add_option("-n,--limit", a->limit, "How many entries (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  sub->add_option("--kind", a->kind, "Only this kind")->check(CLI::IsMember(ts::run::stored_kinds()));
  sub->add_flag("--json", a->json, "JSON on stdout (an array; each entry has id, kind, command, verdict, ...)");
  sub->callback([a] {
    // On a terminal (or with COLUMNS) each row fits the width; piped, rows keep their full columns.
    int width = isatty(STDOUT_FILENO) || std::getenv("COLUMNS") ? report::detect_terminal(STDOUT_FILENO, true).width : 0;
    fmt::print("{}", ts::run::list_runs_text(a->store_path, a->limit, a->json, a->kind, width));
  });
}

}  // namespace ts::cli
