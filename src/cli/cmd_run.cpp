// trainscope run [options] -- COMMAND [ARGS...]: per-step truth from an unchanged training script.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "run/run_report.h"
#include "run/run_session.h"
#include "run/run_text.h"
#include "run/overrides.h"
#include "sample/live_status.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "util/error.h"

#include <memory>
#include <thread>

namespace ts::cli {
namespace {

struct RunArgs {
  ts::run::RunOptions opt;
  std::vector<std::string> command;
  std::vector<std::string> set;  // --set KEY=VALUE (checked by the option's validator)
  std::string profile_steps = "10-14", interval = "100ms", json, serve;
  bool no_profile = false, no_store = false, no_sample = false, live = false, no_live = false;
};

// report.json to FILE, or to stdout with "-" (then instead of the text report). Never by
// default on stdout: the child writes there too.
void write_json_copy(const std::string& report_path, const std::string& to) {
  std::FILE* in = std::fopen(report_path.c_str(), "r");
  if (!in) throw UserError(report_path + ": cannot read the report back");
  std::FILE* out = to == "-" ? stdout : std::fopen(to.c_str(), "w");
  if (!out) {
    std::fclose(in);
    throw UserError(to + ": cannot write the JSON report: " + std::strerror(errno));
  }
  char buf[65536];
  size_t n;
  bool ok = true;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) ok = std::fwrite(buf, 1, n, out) == n && ok;
  std::fclose(in);
  ok = (out == stdout ? std::fflush(out) : std::fclose(out)) == 0 && ok;
  if (!ok) throw UserError(to + ": cannot write the JSON report");
}

void run(RunArgs& a) {
  auto& opt = a.opt;
  opt.command = a.command;
  const StepRange window = step_range_value(a.profile_steps);
  opt.profile_first = window.first, opt.profile_last = window.last;
  opt.profile = !a.no_profile;
  opt.store = !a.no_store;
  opt.sample = !a.no_sample;
  opt.interval = duration_value(a.interval);
  opt.quiet = globals().quiet;
  // srun trainscope run -- torchrun ...: the job directory from the environment, no flag per node
  // (an explicit --out still wins; --out with --job-dir is a usage error).
  if (opt.job_dir.empty() && opt.out_dir.empty())
    if (const char* e = std::getenv("TRAINSCOPE_JOB_DIR"); e && *e) opt.job_dir = e;
  // The live view: on a terminal unless -q; --live / --no-live decide otherwise. Not by default
  // when stdout is a pipe (`| tee log`): its reader may write the job's lines onto the same
  // terminal behind our back, where the panel's rows are.
  struct stat out_st {};
  const bool stdout_pipe = fstat(STDOUT_FILENO, &out_st) == 0 && S_ISFIFO(out_st.st_mode);
  opt.live_panel = a.live || (!a.no_live && !opt.quiet && isatty(STDERR_FILENO) && !stdout_pipe);
  for (const auto& kv : a.set) opt.overrides.push_back(ts::run::parse_override(kv));

  // --serve HOST:PORT: this node's own /metrics while the job runs (`trainscope serve` in a
  // thread, reading the same live-status directory), so Prometheus scrapes every node directly.
  std::unique_ptr<serve::HttpServer> server;
  std::unique_ptr<serve::MetricsCollector> collector;
  std::thread serving;
  if (!a.serve.empty()) {
    server = std::make_unique<serve::HttpServer>(a.serve.find(':') == std::string::npos ? ":" + a.serve : a.serve);
    serve::MetricsOptions mo;
    mo.live_dir = opt.live_dir.empty() ? sample::live_dir() : opt.live_dir;
    collector = std::make_unique<serve::MetricsCollector>(mo);
    collector->start();
    if (!opt.quiet) {
      fmt::print(stderr, "trainscope: serving http://{}/metrics while the job runs\n", server->address());
      const std::string host = serve::parse_listen(a.serve.find(':') == std::string::npos ? ":" + a.serve : a.serve).host;
      if (host != "127.0.0.1" && host != "localhost" && host != "::1")
        fmt::print(stderr, "trainscope: warning: {} is not loopback: anyone who can reach this port reads the metrics\n",
                   host.empty() ? "every interface" : host);
    }
    serving = std::thread([&server, &collector] {
      server->serve([&collector](const std::string&, const std::string& path) {
        serve::HttpResponse r;
        if (path == "/metrics") {
          r.content_type = serve::kContentType;
          r.body = collector->scrape();
        } else {
          r.status = 404;
          r.body = "not found: try /metrics\n";
        }
        return r;
      });
    });
  }
  struct StopServing {
    std::unique_ptr<serve::HttpServer>& server;
    std::unique_ptr<serve::MetricsCollector>& collector;
    std::thread& thread;
    ~StopServing() {
      if (server) server->stop();
      if (thread.joinable()) thread.join();
      if (collector) collector->stop();
    }
  } stop_serving{server, collector, serving};
  auto res = ts::run::run_session(opt);
  std::fflush(stdout);
  if (a.json != "-")
    fmt::print("{}", ts::run::run_text(res, opt, report::detect_terminal(fileno(stdout), globals().no_color)));
  std::fflush(stdout);
  if (!a.json.empty()) write_json_copy(res.report_path, a.json);
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
  auto* out = sub->add_option("--out", a->opt.out_dir, "Output directory (default trainscope-runs/<UTC time>/)");
  sub->add_option("--job-dir", a->opt.job_dir,
                  "One node of a multi-node job: write into DIR/<host>-node<N>/ with the job's identity (node.json), "
                  "for `trainscope report DIR` (default $TRAINSCOPE_JOB_DIR; docs/MULTINODE.md)")
      ->excludes(out);
  sub->add_option("--node-rank", a->opt.node_rank,
                  "This node's rank in the job (default: SLURM_NODEID, torchrun's --node-rank, or the ranks' GROUP_RANK)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--serve", a->serve,
                  "Serve this run's Prometheus /metrics on [HOST:]PORT while it runs (as `trainscope serve`; a bare "
                  "PORT listens on every interface; with --job-dir the training series carry job_id and node)");
  sub->add_option("--steps", a->opt.steps, "End the program after N training steps (graceful: SystemExit(0) at step N)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--profile-steps", a->profile_steps, "Steps recorded by torch.profiler, FIRST-LAST (FIRST >= 2)")
      ->capture_default_str()->check(step_range(true, 2));
  sub->add_flag("--no-profile", a->no_profile, "No profiler window");
  sub->add_option("--interval", a->interval, "Hardware sampling interval, 10ms to 60s")
      ->capture_default_str()->check(duration_between(std::chrono::milliseconds(10), std::chrono::seconds(60)));
  sub->add_flag("--no-sample", a->no_sample, "No hardware sampling");
  sub->add_flag("--no-store", a->no_store, "Do not record the run in the run store");
  sub->add_option("--store", a->opt.store_path, "Run store (SQLite) path");
  std::string keys;
  for (const auto& k : ts::run::override_keys()) keys += fmt::format("\n  {}={}: {}", k.key, k.values, k.what);
  sub->add_option("--set", a->set, "Apply a setting at run time without changing the script (repeatable):" + keys)
      ->check(CLI::Validator([](std::string& s) { return ts::run::check_override(s); }, "KEY=VALUE", "override"))
      // One value per --set: a vector option takes values until `--`, which then only ends the
      // option (CLI11), so `--set threads=1 -- python -c ...` read `-c` as trainscope's option.
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* live = sub->add_flag("--live", a->live,
                              "Live view at the bottom of the terminal while it runs: steps, the median step's phases "
                              "(data wait, H2D, forward, backward, optimizer, GPU), the top finding so far (default "
                              "when stderr is a terminal and stdout is not a pipe)");
  sub->add_flag("--no-live", a->no_live, "No live view")->excludes(live);
  sub->add_flag("--mlflow", a->opt.trackers.mlflow,
                "At the end, log the summary metrics and findings into MLflow: the run MLFLOW_RUN_ID names, else a "
                "new run at MLFLOW_TRACKING_URI (default: the local file store ./mlruns); needs mlflow in the job's "
                "Python");
  sub->add_flag("--wandb", a->opt.trackers.wandb,
                "At the end, log the summary metrics and findings into Weights & Biases, offline mode unless "
                "WANDB_MODE says otherwise (WANDB_PROJECT, default trainscope; WANDB_RUN_ID resumes a run); needs "
                "wandb in the job's Python");
  sub->add_option("--json", a->json,
                  "Also write report.json to FILE at the end; '-' prints it on stdout instead of the text report");
  sub->add_option("command", a->command, "The command to run, after --")->expected(-1)->required();
  sub->callback([a] { run(*a); });
}

}  // namespace ts::cli
