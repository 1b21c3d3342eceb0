// trainscope: why is my training slow, and what do I change?
#include <cstdio>
#include <exception>
#include <fmt/format.h>

#include "cli/commands.h"
#include "util/error.h"

namespace ts::cli {

Globals& globals() {
  static Globals g;
  return g;
}

}  // namespace ts::cli

int main(int argc, char** argv) {
  CLI::App app{"trainscope: tells you why your PyTorch training is slow and what to change"};
  app.set_version_flag("--version", "trainscope 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  auto& g = ts::cli::globals();
  app.add_flag("-q,--quiet", g.quiet, "No progress lines on stderr");
  app.add_flag("--no-color", g.no_color, "Plain output even on a terminal");

  // Commands register here, one line each.
  ts::cli::register_analyze(app);
  ts::cli::register_doctor(app);
  ts::cli::register_serve(app);
  ts::cli::register_lab(app);
  ts::cli::register_loader(app);
  ts::cli::register_max_batch(app);
  ts::cli::register_compare(app);
  ts::cli::register_run(app), ts::cli::register_runs(app), ts::cli::register_report(app);
  ts::cli::register_watch(app), ts::cli::register_snapshot(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ts::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "trainscope: {}\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "trainscope: internal error: {}\n", e.what());
    return 70;
  }
  return g.exit_code;
}
