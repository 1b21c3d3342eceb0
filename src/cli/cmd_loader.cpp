// trainscope loader TARGET: the DataLoader sweep, each setting in a fresh process.
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "experiment/store_result.h"
#include "experiment/compare.h"
#include "experiment/loader_sweep.h"
#include "util/error.h"

namespace ts::cli {

void register_loader(CLI::App& app) {
  struct Opts {
    experiment::LoaderOptions loader;
    bool no_persistent = false, json = false, no_store = false;
    std::string from_run;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("loader", "Sweep DataLoader settings (num_workers, pin_memory, prefetch_factor, "
                                           "persistent_workers) on your dataset and recommend one");
  cmd->footer(
      "TARGET is path/to/file.py:factory or package.module:factory (docs/LAB.md). Sweeps num_workers 0, 1, 2, 4 ...\n"
      "up to the usable cores, then pin_memory (with CUDA), prefetch_factor and persistent_workers at the best worker\n"
      "count. Recommends the cheapest setting within 5% of the best; with --gpu-step-ms, the cheapest that keeps\n"
      "up with the GPU, and predicts the GPU idle share of each (idle = 1 - GPU step time / batch\n"
      "interval: 20 ms of compute fed every 45 ms idles 55%). Warns when /dev/shm is too small for the recommended workers.");
  cmd->add_option("target", o->loader.target, "path/to/file.py:factory or package.module:factory")->required();
  cmd->add_option("--workers", o->loader.workers, "Worker counts to try (default: 0 1 2 4 ... cores)")->delimiter(',');
  cmd->add_option("--prefetch", o->loader.prefetch, "prefetch_factor values to try besides the default 2")->delimiter(',')->capture_default_str();
  cmd->add_flag("--no-persistent", o->no_persistent, "Do not try persistent_workers=True");
  cmd->add_option("--batches", o->loader.batches, "Timed batches per epoch")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--epochs", o->loader.epochs, "Epochs per setting (2+: the restart persistent_workers saves)")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--gpu-step-ms", o->loader.gpu_step_ms, "The GPU's compute time per step (from `trainscope run`), for the idle prediction");
  cmd->add_option("--from-run", o->from_run, "Take the GPU step time from a `trainscope run` (folder, report.json or id)")
      ->excludes("--gpu-step-ms");
  cmd->add_option("--cores", o->loader.cores, "Usable cores (default: affinity and cgroup quota)");
  cmd->add_option("--python", o->loader.python, "Interpreter to run in (default: the first with torch)");
  cmd->add_option("--timeout", o->loader.timeout_s, "Seconds per setting before it is killed")->capture_default_str();
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_flag("--no-store", o->no_store, "Do not record the result as a run in the store");
  cmd->callback([o] {
    if (!o->from_run.empty()) {
      auto run = experiment::load_side(o->from_run, false);
      if (run.gpu_ms <= 0)
        throw UserError(o->from_run + ": the run measured no GPU step time (no CUDA there?); pass --gpu-step-ms");
      o->loader.gpu_step_ms = run.gpu_ms;
    }
    o->loader.try_persistent = !o->no_persistent;
    o->loader.progress = !globals().quiet;
    double started = experiment::unix_now();
    auto r = experiment::run_loader_sweep(o->loader);
    std::string json = experiment::loader_json(r);
    fmt::print("{}", o->json ? json : experiment::loader_text(r));
    std::fflush(stdout);
    if (!o->no_store) {
      int64_t id = experiment::store_experiment("loader", "trainscope loader " + o->loader.target, json, started,
                                                experiment::unix_now());
      if (id >= 0 && !globals().quiet) fmt::print(stderr, "trainscope: stored as run {}\n", id);
    }
  });
}

}  // namespace ts::cli
