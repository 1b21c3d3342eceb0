#pragma once
// `trainscope verify`: checks trainscope's own advice on the user's unchanged script. A baseline
// `trainscope run` and its diagnosis; then, for each of the top findings whose fix can be applied
// at run time (Finding::fix_settings, applied by the agent as `run --set` overrides), a re-run
// with that fix, and one with all of them; every run measured over the same step range after
// warm-up. The result sets each fix's predicted speedup beside the measured one, and says
// whether the finding is gone.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "run/agent_records.h"
#include "run/overrides.h"

namespace ts::experiment {

struct VerifyOptions {
  std::vector<std::string> command;
  int64_t steps = 200;   // each run stops after this many steps (--steps)
  int top = 3;           // fixes tried: those of the top N findings
  std::string out_dir;   // "" = trainscope-runs/verify-<UTC time>/
  bool progress = true;  // lines on stderr
  bool sample = true;    // hardware sampling in each run (the CPU budget sizes DataLoader workers)
  std::string patch_file;  // --patch FILE: the measured fixes as a diff of the user's files ("" none)
};

struct VerifyRun {
  std::string label;                          // "baseline", a finding id, "all"
  std::vector<run::Override> settings;        // what --set applied (empty for the baseline)
  std::vector<run::OverrideOutcome> outcomes;  // the agent's word on each setting
  std::string out_dir;
  int exit_code = 0;
  std::string failure;       // a failed run's error line (a traceback's exception), "" when none
  int64_t steps = 0;         // steps the run made
  double step_ms = -1;       // mean step over the measured range, -1 when it did not reach it
  // The whole run (run.time_account): its wall time and compilation, -1 unknown. A fix that
  // compiles (torch.compile) trades compilation for step time: the report says when it pays back.
  double run_s = -1, compile_s = -1;
  double spread = -1;        // how much the run varies by itself (block_spread), -1 unknown
  std::vector<std::string> findings;  // finding ids of this run's diagnosis
  // ...and what each still charges: its share of this run's step, and whether it is critical.
  struct Charge {
    std::string id;
    double fraction = 0;
    bool critical = false;
  };
  std::vector<Charge> charges;
  std::string problem;       // why it has no measurement ("" when it has one)
};

struct VerifyFix {
  std::string finding, title;                // "all" for the combined run
  std::vector<run::Override> settings;
  std::string code;                          // the code change that makes it permanent
  double predicted_speedup = 1, measured_speedup = -1;  // -1: not measured
  bool resolved = false;                     // the re-run charges it < 5% of the baseline's step (still_costs)
  double still_charged_ms = -1;              // what the re-run still charges it per step (-1 not measured)
  std::string not_applied;                   // settings the agent could not apply, and why
  VerifyRun run;
};

// verify --patch: the measured fixes written at the recorded lines of the user's code, applied to
// a copy of the project and measured again (docs/AGENT.md "How sites become edits").
struct VerifyPatch {
  std::string file;                   // --patch FILE, absolute
  bool written = false;               // FILE holds the patch (it applied and its re-run reproduced the gain)
  std::string diff;                   // the unified diff (paths relative to the command's directory)
  std::vector<std::string> files;     // the files it changes
  struct Edit {
    std::string fix, file, what;
    int64_t line = 0;
  };
  std::vector<Edit> edits;
  std::vector<std::string> refused;   // one line per site that gets no patch, and why
  std::vector<std::string> notes;     // settings with no line to write them at, or not applied at run time
  std::vector<std::string> fixes;     // the findings whose fixes are in it
  std::string compared_with;          // the --set run it must reproduce: a finding id or "all"
  double set_step_ms = -1, set_speedup = -1, predicted_speedup = -1;
  double measured_speedup = -1;       // the patched copy's, -1 not measured
  double tolerance = 0;               // how far the patched copy's step may be from the --set run's (fraction):
                                      // kPatchTolerance, or either run's own spread when larger
  bool reproduced = false;
  VerifyRun run;                      // the patched copy's run
  std::string problem;                // why FILE was not written ("" when it was)
};

struct VerifyResult {
  std::vector<std::string> command;
  std::string out_dir, verdict;
  int64_t steps = 0, first_step = 0, last_step = 0;  // the measured range (inclusive)
  VerifyRun baseline;
  std::vector<std::string> baseline_titles;          // the baseline's findings, ranked, "title (id)"
  std::vector<VerifyFix> fixes;                      // one per applicable fix of the top findings
  std::optional<VerifyFix> all;                      // every fix at once (when there are two or more)
  std::vector<std::string> notes;                    // findings without a run-time fix, ...
  std::optional<VerifyPatch> patch;                  // with --patch
};

// Pure parts (tested directly).
// Mean step time over steps first..last (inclusive) from the steps' end times:
// (t_end[last] - t_end[first - 1]) / (last - first + 1), the nearest recorded steps when some are
// missing; -1 when the range is not covered. A mean, not a median: workers deliver in bursts.
double mean_step_ms(const std::vector<run::StepRecord>& steps, int64_t first, int64_t last);
// How much a run varies by itself: the mean steps of the eighths of first..last, the fastest and
// the slowest left out, their range over the median of all eight; -1 when not covered (< 16 steps).
double block_spread(const std::vector<run::StepRecord>& steps, int64_t first, int64_t last);
// The measured range for runs of `steps` steps whose profiler window is the last five steps.
std::pair<int64_t, int64_t> measured_range(int64_t steps);
// Whether a fix's re-run still charges finding `id` what counts: it is critical, or its share of the
// re-run's step, in ms, is 5% (kVerdictMinRecoverable) of the baseline's step or more. Resolved is
// the opposite: the problem no longer costs what it did, whether or not a note with its id is left.
bool still_costs(const VerifyRun& fix, const std::string& id, double baseline_ms);
// What a fix's re-run still charges the findings `ids` per step, in ms (their shares of the
// re-run's measured step, summed; 0 when none is left); -1 when the re-run was not measured.
double still_charged_ms(const VerifyRun& fix, const std::vector<std::string>& ids);
// A fix that adds compilation: the whole runs and the steps after which it pays back ("" when the
// fix adds under 0.5 s of compilation or a run was not accounted).
std::string compile_trade(const VerifyRun& base, const VerifyRun& fix);
// "a=1 b=2"
std::string settings_text(const std::vector<run::Override>& s);
// The fixes verify re-runs: of the first `top` findings, those with run-time settings, each
// setting set once. A finding without one, or whose gain is outside the steps verify measures
// (worker-restarts), gets a line in `notes` saying what to do instead.
std::vector<const diagnose::Finding*> fixes_to_try(const diagnose::Diagnosis& d, int top,
                                                  std::vector<std::string>& notes);

// How far a patched copy's step may be from the --set run's and still count as the same measurement:
// the run-to-run spread of verify's re-runs on a loaded 2-core machine (docs/BENCHMARKS.md).
inline constexpr double kPatchTolerance = 0.30;
// Whether a patched copy's step reproduces the --set run's: no more than `tolerance` (a fraction)
// slower than it; faster counts (load only slows a run).
bool patch_reproduces(double patched_ms, double set_ms, double tolerance);

VerifyResult run_verify(const VerifyOptions& opt);
std::string verify_text(const VerifyResult& r);
// `gate`: the regression gate's verdict as JSON (regression_gate.h), added as "gate" when given.
std::string verify_json(const VerifyResult& r, const std::string& gate = "");
// Writes verify.txt and verify.json into the result's folder (`trainscope report ID` shows the text).
void save_verify(const VerifyResult& r);

}  // namespace ts::experiment
