// trainscope runs: the runs recorded by `trainscope run`, newest first.
#include <fmt/format.h>

#include "cli/commands.h"
#include "run/run_store.h"
#include "util/error.h"

namespace ts::cli {
namespace {
struct RunsArgs {
  std::string store_path;
  int limit = 20;
  bool json = false;
};
}  // namespace

void register_runs(CLI::App& app) {
  auto a = std::make_shared<RunsArgs>();
  auto* sub = app.add_subcommand("runs", "List the runs recorded by `trainscope run`, newest first");
  sub->add_option("--store", a->store_path, "Run store (SQLite) path");
  sub->add_option("-n,--limit", a->limit, "How many runs")->capture_default_str();
  sub->add_flag("--json", a->json, "JSON on stdout");
  sub->callback([a] { fmt::print("{}", ts::run::list_runs_text(a->store_path, a->limit, a->json)); });
}

}  // namespace ts::cli
