// trainscope run [options] -- COMMAND [ARGS...]: per-step truth from an unchanged training script.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "run/run_report.h"
#include "run/run_session.h"
#include "run/run_text.h"
#include "run/overrides.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct RunArgs {
  ts::run::RunOptions opt;
  std::vector<std::string> command;
  std::vector<std::string> set;  // --set KEY=VALUE (checked by the option's validator)
  std::string profile_steps = "10-14";
  bool no_profile = false, json = false, no_store = false, no_sample = false;
  int interval_ms = 100;
};

void parse_window(const std::string& s, ts::run::RunOptions& opt) {
  auto dash = s.find('-');
  try {
    if (dash == std::string::npos) throw std::invalid_argument(s);
    opt.profile_first = std::stoll(s.substr(0, dash));
    opt.profile_last = std::stoll(s.substr(dash + 1));
  } catch (const std::exception&) {
    throw UserError("--profile-steps " + s + ": expected FIRST-LAST, e.g. 10-14");
  }
  if (opt.profile_first < 2 || opt.profile_last < opt.profile_first)
    throw UserError("--profile-steps " + s + ": FIRST must be >= 2 (step 1 is warm-up) and LAST >= FIRST");
}

void run(RunArgs& a) {
  auto& opt = a.opt;
  opt.command = a.command;
  if (opt.command.empty()) throw UserError("run: no command given (usage: trainscope run [options] -- COMMAND ...)");
  parse_window(a.profile_steps, opt);
  opt.profile = !a.no_profile;
  opt.store = !a.no_store;
  opt.sample = !a.no_sample;
  if (a.interval_ms < 10) throw UserError(fmt::format("--interval {}: at least 10 ms", a.interval_ms));
  opt.interval = std::chrono::milliseconds(a.interval_ms);
  opt.quiet = globals().quiet;
  if (opt.steps < 0) throw UserError("--steps must be >= 1");
  for (const auto& kv : a.set) opt.overrides.push_back(ts::run::parse_override(kv));

  auto res = ts::run::run_session(opt);
  std::fflush(stdout);
  if (a.json) {
    std::FILE* f = std::fopen(res.report_path.c_str(), "r");
    if (f) {
      char buf[65536];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stdout);
      std::fclose(f);
    }
  } else {
    fmt::print("{}", ts::run::run_text(res, opt, report::detect_terminal(fileno(stdout), globals().no_color)));
  }
  std::fflush(stdout);
  globals().exit_code = res.exit.shell_code();
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand("run", "Run a training command with the agent injected; diagnose it at the end");
  sub->footer(
      "Example: trainscope run --steps 50 -- python train.py --lr 3e-4\n"
      "The command keeps your terminal (stdin/stdout/stderr); Ctrl-C stops it and still writes the report.\n"
      "Exit status: the command's own, or 128+signal. Output: --out DIR (default trainscope-runs/<time>/)\n"
      "with report.json, trace.json (profiler window) and samples.csv; the run is stored for `trainscope runs`.");
  sub->add_option("--out", a->opt.out_dir, "Output directory (default trainscope-runs/<UTC time>/)");
  sub->add_option("--steps", a->opt.steps, "End the program after N training steps (graceful: SystemExit(0) at step N)");
  sub->add_option("--profile-steps", a->profile_steps, "Steps recorded by torch.profiler, FIRST-LAST")->capture_default_str();
  sub->add_flag("--no-profile", a->no_profile, "No profiler window");
  sub->add_option("--interval", a->interval_ms, "Hardware sampling interval in ms")->capture_default_str();
  sub->add_flag("--no-sample", a->no_sample, "No hardware sampling");
  sub->add_flag("--no-store", a->no_store, "Do not record the run in the run store");
  sub->add_option("--store", a->opt.store_path, "Run store (SQLite) path");
  std::string keys;
  for (const auto& k : ts::run::override_keys()) keys += fmt::format("\n  {}={}: {}", k.key, k.values, k.what);
  sub->add_option("--set", a->set, "Apply a setting at run time without changing the script (repeatable):" + keys)
      ->check(CLI::Validator([](std::string& s) { return ts::run::check_override(s); }, "KEY=VALUE", "override"));
  sub->add_flag("--json", a->json, "Print report.json on stdout at the end instead of the text report");
  sub->add_option("command", a->command, "The command to run, after --")->expected(-1);
  sub->callback([a] { run(*a); });
}

}  // namespace ts::cli
