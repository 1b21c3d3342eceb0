// trainscope verify [options] -- COMMAND ...: apply trainscope's fixes to the unchanged script,
// re-run it and set the measured gain beside the predicted one (logic: experiment/verify.*).
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "experiment/store_result.h"
#include "experiment/regression_gate.h"
#include "experiment/verify.h"

namespace ts::cli {

void register_verify(CLI::App& app) {
  struct Opts {
    experiment::VerifyOptions v;
    bool json = false, no_store = false, no_sample = false;
    std::string max_regression;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("verify", "Apply the recommended fixes to your unchanged script, re-run it and "
                                           "measure each fix's gain beside the predicted one");
  cmd->footer(
      "Example: trainscope verify --steps 200 -- python train.py\n"
      "Runs the command once as it is (the baseline, diagnosed like `trainscope run`), then once per fix of the top\n"
      "findings that can be applied at run time (the `run --set` settings: DataLoader workers, pinned memory,\n"
      "non-blocking copies, bf16 autocast, torch.compile, fused/foreach optimizers, threads, zero_grad), and once\n"
      "with all of them. Each run stops after --steps steps; all are measured alike: the mean step over the same\n"
      "steps after warm-up, before the profiler window. The command's own output goes to stderr.\n"
      "Gate (CI): --max-regression 10% exits 1 with one line on stderr when a fix's re-run is more than 10% slower\n"
      "than its predicted step (baseline step / predicted speedup), its finding is not resolved, or it was not\n"
      "measured: a fix that must hold its gain. --json carries the verdict as \"gate\".\n"
      "Patch: --patch fix.diff writes each measured fix at the line of your code the run recorded (the DataLoader,\n"
      "optimizer, forward call, copies, TrainingArguments / Lightning Trainer), edited from Python's syntax tree, the\n"
      "rest of each file unchanged. The patch is applied to a copy of this directory (never your files) and the copy\n"
      "is run again: FILE is written only when that run is at most 30% (or the runs' own spread) slower than the --set\n"
      "run. A site that cannot be patched (file changed since the run, notebook cell, exec, zip, site-packages,\n"
      "read-only, **kwargs) gets one line and no edit; exit status 1 when no patch is written.");
  cmd->add_option("--steps", o->v.steps, "Steps per run (the script must run at least this long, or it is measured "
                                         "over the steps it makes)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{30}, int64_t{1000000}));
  cmd->add_option("--top", o->v.top, "Fixes of the top N findings are tried")->capture_default_str()->check(CLI::Range(1, 20));
  cmd->add_option("--out", o->v.out_dir, "Output directory (default trainscope-runs/verify-<UTC time>/)");
  cmd->add_flag("--no-sample", o->no_sample, "No hardware sampling (then DataLoader workers are not capped by the cores)");
  cmd->add_option("--patch", o->v.patch_file,
                  "Write the measured fixes as a unified diff of your own files to FILE (git apply / patch -p1 in this "
                  "directory), after applying it to a copy of this directory and measuring the patched copy")
      ->type_name("FILE");
  cmd->add_flag("--json", o->json, "Print one JSON object (schema trainscope.verify/1) instead of the table");
  add_max_regression(cmd, o->max_regression,
                     "Fail (exit 1) when a fix falls more than PCT short of its predicted step, or is not resolved");
  cmd->add_flag("--no-store", o->no_store, "Do not record the result in the run store");
  cmd->add_option("command", o->v.command, "The command to run, after --")->expected(-1)->required();
  cmd->callback([o] {
    o->v.progress = !globals().quiet;
    o->v.sample = !o->no_sample;
    double started = experiment::unix_now();
    auto r = experiment::run_verify(o->v);
    std::optional<experiment::GateVerdict> gate;
    if (!o->max_regression.empty())
      gate = experiment::gate_verify(r, *experiment::parse_regression_limit(o->max_regression));
    std::string json = experiment::verify_json(r, gate ? experiment::gate_json(*gate) : "");
    experiment::save_verify(r);
    std::fflush(stderr);
    fmt::print("{}", o->json ? json : experiment::verify_text(r));
    std::fflush(stdout);
    if (!o->no_store) {
      std::string cmdline = "trainscope verify --";
      for (const auto& a : o->v.command) cmdline += " " + a;
      int64_t id = experiment::store_experiment("verify", cmdline, json, started, experiment::unix_now());
      if (id >= 0 && !globals().quiet) fmt::print(stderr, "trainscope: stored as run {}\n", id);
    }
    if (gate) {
      fmt::print(stderr, "trainscope: verify: {}\n", gate->line);
      if (!gate->pass) globals().exit_code = 1;
    }
    if (r.patch) {
      if (r.patch->written)
        fmt::print(stderr, "trainscope: verify: patch written to {} ({})\n", o->v.patch_file, fmt::join(r.patch->files, ", "));
      else {
        fmt::print(stderr, "trainscope: verify: no patch written to {}: {}\n", o->v.patch_file, r.patch->problem);
        globals().exit_code = 1;
      }
    }
  });
}

}  // namespace ts::cli
