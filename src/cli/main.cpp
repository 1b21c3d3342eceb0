// trainscope: why is my training slow, and what do I change?
#include <cstdio>
#include <cstring>
#include <exception>
#include <regex>
#include <fmt/format.h>
#include <string>

#include "cli/commands.h"
#include "util/error.h"

namespace ts::cli {

Globals& globals() {
  static Globals g;
  return g;
}

namespace {

// A usage error as one line. CLI11 prints its message and "Run with --help ..." on two lines
// (and some messages span several); trainscope says what is wrong and where help is, once:
// "trainscope: analyze: --top: Value 0 not in range 1 to 1000 (see --help)".
std::string usage_problem(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string what;
  for (const char* c = e.what(); *c; ++c) {
    bool space = *c == '\n' || *c == '\r' || *c == '\t' || *c == ' ';
    if (space && (what.empty() || what.back() == ' ')) continue;
    what += space ? ' ' : *c;
  }
  while (!what.empty() && what.back() == ' ') what.pop_back();
  std::vector<CLI::App*> chosen = app.get_subcommands();
  // CLI11's PositiveNumber and NonNegativeNumber both say "Value 0 not in range 0.000000 to
  // 17976931348623157...(309 digits)"; the option's validator says which one it was.
  static const std::regex unbounded(R"(^(\S+): Value (.*) not in range \S+ to [0-9]{100,}\.[0-9]+)");
  std::smatch m;
  if (std::regex_search(what, m, unbounded)) {
    const CLI::Option* opt = (chosen.empty() ? &app : chosen.back())->get_option_no_throw(m[1].str());
    // The help's type column carries the validator's description: "INT:POSITIVE", "FLOAT:NONNEGATIVE".
    bool positive = opt && opt->get_type_name().find("NONNEGATIVE") == std::string::npos &&
                    opt->get_type_name().find("POSITIVE") != std::string::npos;
    what = fmt::format("{}: {} is not a {}{}", m[1].str(), m[2].str(), positive ? "positive number" : "number >= 0", m.suffix().str());
  }
  if (chosen.empty()) {
    // No command recognised: name the word that is not one (global flags take no values).
    for (int i = 1; i < argc; ++i) {
      if (argv[i][0] != '-') return fmt::format("unknown command '{}'", argv[i]);
      if (!app.get_option_no_throw(argv[i])) return fmt::format("unknown option '{}'", argv[i]);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {
      std::string names;
      for (const CLI::App* s : app.get_subcommands([](CLI::App*) { return true; }))
        names += (names.empty() ? "" : ", ") + s->get_name();
      return "a command is required: " + names;
    }
    return what;
  }
  return chosen.back()->get_name() + ": " + what;
}

}  // namespace
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
  ts::cli::register_verify(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all, --version
    std::fflush(stdout);
    fmt::print(stderr, "trainscope: {} (see --help)\n", ts::cli::usage_problem(app, e, argc, argv));
    return 2;  // usage error: apart from 1 (bad input, failed check) and the command's own status
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
