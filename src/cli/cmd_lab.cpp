// trainscope lab TARGET: the three-run lab (fp32, bf16, bf16 + compile), each in a fresh process.
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "experiment/store_result.h"
#include "experiment/lab.h"

namespace ts::cli {

void register_lab(CLI::App& app) {
  struct Opts {
    experiment::LabOptions lab;
    std::string configs;
    bool json = false, no_store = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("lab", "The three-run lab: fp32, bf16 autocast, bf16 + torch.compile on your model, "
                                        "same seed and data, each in a fresh process");
  cmd->footer(
      "TARGET is path/to/file.py:factory or package.module:factory; the factory returns the model, the data and\n"
      "the loss (docs/LAB.md). Each configuration trains --steps steps after --warmup unmeasured ones on the same\n"
      "fixed slice of the data, with clip_grad_norm_(1.0), and reports samples/s (median and spread), peak memory\n"
      "and the speed-up ratios, read plainly (fp32 -> bf16 under 1.20x: the math is not what holds the step back;\n"
      "look at the data pipeline).\n"
      "Configurations this PyTorch or device cannot run (torch.compile on 1.13, bf16 before sm_80) are skipped.");
  cmd->add_option("target", o->lab.target, "path/to/file.py:factory or package.module:factory")->required();
  cmd->add_option("--configs", o->configs,
                  "Comma-separated: fp32, bf16, bf16+compile, fp16+scaler, bf16+channels_last (default: the first three)");
  cmd->add_flag("--extended", o->lab.extended, "Also fp16 + GradScaler and bf16 + channels_last");
  cmd->add_option("--steps", o->lab.steps, "Measured steps per configuration")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->lab.warmup, "Unmeasured steps first (compilation happens here)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-size", o->lab.batch_size, "Override the factory's batch size");
  cmd->add_option("--seed", o->lab.seed, "Seed for every configuration")->capture_default_str();
  cmd->add_option("--device", o->lab.device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--python", o->lab.python, "Interpreter to run in (default: $TRAINSCOPE_PYTHON, python3, /usr/bin/python3: the first with torch)");
  cmd->add_option("--timeout", o->lab.timeout_s, "Seconds per configuration before it is killed")->capture_default_str();
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_flag("--no-store", o->no_store, "Do not record the result as a run in the store");
  cmd->callback([o] {
    if (!o->configs.empty()) {
      size_t start = 0;
      while (start <= o->configs.size()) {
        size_t comma = o->configs.find(',', start);
        std::string c = o->configs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!c.empty()) o->lab.configs.push_back(c);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    o->lab.progress = !globals().quiet;
    double started = experiment::unix_now();
    auto r = experiment::run_lab(o->lab);
    std::string json = experiment::lab_json(r);
    fmt::print("{}", o->json ? json : experiment::lab_text(r));
    std::fflush(stdout);
    if (!o->no_store) {
      int64_t id = experiment::store_experiment("lab", "trainscope lab " + o->lab.target, json, started,
                                                experiment::unix_now());
      if (id >= 0 && !globals().quiet) fmt::print(stderr, "trainscope: stored as run {}\n", id);
    }
  });
}

}  // namespace ts::cli
