// trainscope max-batch TARGET: the largest batch a full training step fits in.
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "experiment/store_result.h"
#include "experiment/max_batch.h"

namespace ts::cli {

void register_max_batch(CLI::App& app) {
  struct Opts {
    experiment::MaxBatchOptions mb;
    std::string limit;
    bool json = false, no_store = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("max-batch", "Find the largest batch for which forward, backward and the optimizer "
                                              "step fit in memory, and recommend one with headroom");
  cmd->footer(
      "Doubles the batch from --start until a step runs out of memory, then binary-searches between the last fit\n"
      "and the first miss, in one process that recovers from every out-of-memory (on a GPU a real OOM: the step's\n"
      "tensors are dropped and the cache emptied; the process checks nothing leaked and the context still works).\n"
      "On a CPU-only machine give --memory-limit: a step fits when its measured memory (parameters, optimizer\n"
      "state and the step's peak RSS) stays under it. Reports memory per sample and a recommended batch.");
  cmd->add_option("target", o->mb.target, "path/to/file.py:factory or package.module:factory")->required();
  cmd->add_option("--memory-limit", o->limit, "Memory budget, e.g. 512MiB or 16GB (required without a GPU; on a GPU "
                                              "caps the process so the OOMs are real)");
  cmd->add_option("--start", o->mb.start, "First batch size tried")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--cap", o->mb.cap, "Largest batch size tried")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--precision", o->mb.config, "fp32, bf16 or fp16 (autocast)")->capture_default_str()->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--headroom", o->mb.headroom, "Share of memory the recommended batch leaves free")->capture_default_str()->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--device", o->mb.device, "auto, cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--python", o->mb.python, "Interpreter to run in (default: the first with torch)");
  cmd->add_option("--timeout", o->mb.timeout_s, "Seconds before the search is killed")->capture_default_str();
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_flag("--no-store", o->no_store, "Do not record the result as a run in the store");
  cmd->callback([o] {
    if (!o->limit.empty()) o->mb.memory_limit_bytes = experiment::parse_bytes(o->limit);
    o->mb.progress = !globals().quiet;
    double started = experiment::unix_now();
    auto r = experiment::run_max_batch(o->mb);
    std::string json = experiment::max_batch_json(r);
    fmt::print("{}", o->json ? json : experiment::max_batch_text(r));
    std::fflush(stdout);
    if (!o->no_store) {
      int64_t id = experiment::store_experiment("max-batch", "trainscope max-batch " + o->mb.target, json, started,
                                                experiment::unix_now());
      if (id >= 0 && !globals().quiet) fmt::print(stderr, "trainscope: stored as run {}\n", id);
    }
  });
}

}  // namespace ts::cli
