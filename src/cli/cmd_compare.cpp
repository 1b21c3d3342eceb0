// trainscope compare A B: before/after, two traces or two runs; with --max-regression, a CI gate.
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "experiment/compare.h"
#include "experiment/regression_gate.h"
#include "util/error.h"

namespace ts::cli {

void register_compare(CLI::App& app) {
  struct Opts {
    std::string a, b, max_regression;
    int top = 15;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("compare", "Compare two traces or two runs: step time, per-class and per-kernel "
                                            "deltas, findings resolved and new");
  cmd->footer(
      "A and B are each a profiler trace (.json / .json.gz), a `trainscope run` output folder or its report.json,\n"
      "or a run id in the store. Times are per step (median step time; class and kernel times summed over the\n"
      "steps and divided by their count), so runs of different lengths compare. A is before, B after.\n"
      "Gate (CI): --max-regression 5% exits 1 with one line on stderr when B's step time is more than 5% slower,\n"
      "a finding is new in B, or one got worse (charges more than 5% of A's step more); --json carries the\n"
      "verdict as \"gate\". Example: trainscope compare baseline/ trainscope-runs/latest --max-regression 5%");
  cmd->add_option("a", o->a, "Before: trace, run folder, report.json or run id")->required();
  cmd->add_option("b", o->b, "After: trace, run folder, report.json or run id")->required();
  cmd->add_option("--top", o->top, "Kernels to list (largest change first)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Machine-readable output");
  add_max_regression(cmd, o->max_regression,
                     "Fail (exit 1) when B regressed by more than PCT: step time, or a finding new or worse");
  cmd->callback([o] {
    bool progress = !globals().quiet;
    auto a = experiment::load_side(o->a, progress);
    auto b = experiment::load_side(o->b, progress);
    auto r = experiment::compare_sides(std::move(a), std::move(b), o->top);
    std::optional<experiment::GateVerdict> gate;
    if (!o->max_regression.empty()) {
      if (r.a.step_ms <= 0 && r.a.findings.empty())
        throw UserError(r.a.label + ": nothing to gate on (no step time and no findings)");
      gate = experiment::gate_compare(r, *experiment::parse_regression_limit(o->max_regression));
    }
    fmt::print("{}", o->json ? experiment::compare_json(r, gate ? experiment::gate_json(*gate) : "")
                             : experiment::compare_text(r));
    std::fflush(stdout);
    if (gate) {
      // The one line a CI log shows: on stderr, so --json stdout stays one object.
      fmt::print(stderr, "trainscope: compare: {}\n", gate->line);
      if (!gate->pass) globals().exit_code = 1;
    }
  });
}

}  // namespace ts::cli
