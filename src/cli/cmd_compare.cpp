// trainscope compare A B: before/after, two traces or two runs.
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "experiment/compare.h"

namespace ts::cli {

void register_compare(CLI::App& app) {
  struct Opts {
    std::string a, b;
    int top = 15;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("compare", "Compare two traces or two runs: step time, per-class and per-kernel "
                                            "deltas, findings resolved and new");
  cmd->footer(
      "A and B are each a profiler trace (.json / .json.gz), a `trainscope run` output folder or its report.json,\n"
      "or a run id in the store. Times are per step (median step time; class and kernel times summed over the\n"
      "steps and divided by their count), so runs of different lengths compare. A is before, B after.");
  cmd->add_option("a", o->a, "Before: trace, run folder, report.json or run id")->required();
  cmd->add_option("b", o->b, "After: trace, run folder, report.json or run id")->required();
  cmd->add_option("--top", o->top, "Kernels to list (largest change first)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->callback([o] {
    bool progress = !globals().quiet;
    auto a = experiment::load_side(o->a, progress);
    auto b = experiment::load_side(o->b, progress);
    auto r = experiment::compare_sides(std::move(a), std::move(b), o->top);
    fmt::print("{}", o->json ? experiment::compare_json(r) : experiment::compare_text(r));
    std::fflush(stdout);
  });
}

}  // namespace ts::cli
