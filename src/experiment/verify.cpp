#include "experiment/verify.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <unistd.h>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iterator>
#include <map>

#include "diagnose/diagnose.h"
#include "experiment/patch_apply.h"
#include "experiment/patch_plan.h"
#include "run/agent_locator.h"
#include "diagnose/thresholds.h"
#include "run/run_session.h"
#include "util/error.h"
#include "util/failure_line.h"

namespace ts::experiment {
namespace fs = std::filesystem;
namespace th = diagnose::th;

namespace {

std::string default_out_dir() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "trainscope-runs/verify-%Y%m%d-%H%M%S", &tm);
  std::string dir = buf;
  for (int i = 2; fs::exists(dir); ++i) dir = fmt::format("{}-{}", buf, i);
  return dir;
}

void say(const VerifyOptions& opt, const std::string& line) {
  if (opt.progress) fmt::print(stderr, "trainscope verify: {}\n", line);
}

// One `trainscope run` of the command with `settings`; its steps and diagnosis for the caller.
// `command`/`cwd`: another command line and directory (the patched copy); `agent`: the run's
// agent summary for the caller (the baseline's sites).
VerifyRun one_run(const VerifyOptions& opt, const std::string& label, const std::string& dir,
                  const std::vector<run::Override>& settings, std::vector<run::StepRecord>& steps,
                  std::optional<diagnose::Diagnosis>& diagnosis, const std::vector<std::string>* command = nullptr,
                  const std::string& cwd = "", run::AgentSummary* agent = nullptr) {
  VerifyRun v;
  v.label = label;
  v.settings = settings;
  run::RunOptions ro;
  ro.command = command ? *command : opt.command;
  ro.cwd = cwd;
  ro.out_dir = dir;
  ro.steps = opt.steps;
  // Every run profiles the same last steps, so the measured range before them is alike in all.
  ro.profile_first = std::max<int64_t>(2, opt.steps - th::kVerifyProfileSteps);
  ro.profile_last = opt.steps - 1;
  ro.sample = opt.sample;
  ro.store = false;  // the verify result is stored once, as kind "verify"
  ro.quiet = !opt.progress;
  ro.live = false;
  ro.overrides = settings;
  ro.child_stdout_to_stderr = true;  // stdout carries the table or the JSON only
  run::RunResult res = run::run_session(ro);
  v.out_dir = res.out_dir;
  v.exit_code = res.exit.shell_code();
  if (v.exit_code != 0) v.failure = failure_line(res.stderr_tail);
  if (res.evidence.agent && res.evidence.agent->time_account) {
    v.run_s = res.evidence.agent->time_account->total_s;
    v.compile_s = res.evidence.agent->time_account->compile_s;
  }
  v.steps = res.agent.evidence.steps;
  v.outcomes = res.overrides;
  if (res.diagnosis)
    for (const auto& f : res.diagnosis->findings) {
      v.findings.push_back(f.id);
      v.charges.push_back({f.id, f.recoverable_fraction, f.severity == diagnose::Severity::Critical});
    }
  diagnosis = res.diagnosis;
  steps = res.agent.steps;
  if (agent) *agent = std::move(res.agent);
  return v;
}

}  // namespace

// What the re-run still charges is measured against the baseline's step: a starved loop made 6x
// faster that still waits half of its new, short step has had most of its cost removed.
double still_charged_ms(const VerifyRun& fix, const std::vector<std::string>& ids) {
  if (fix.step_ms <= 0) return -1;
  double ms = 0;
  for (const auto& c : fix.charges)
    if (std::find(ids.begin(), ids.end(), c.id) != ids.end()) ms += c.fraction * fix.step_ms;
  return ms;
}

bool still_costs(const VerifyRun& fix, const std::string& id, double baseline_ms) {
  for (const auto& c : fix.charges)
    if (c.id == id && c.critical) return true;
  return still_charged_ms(fix, {id}) >= diagnose::th::kVerdictMinRecoverable * baseline_ms;
}

double mean_step_ms(const std::vector<run::StepRecord>& steps, int64_t first, int64_t last) {
  if (first < 1 || last < first) return -1;
  std::map<int64_t, int64_t> t_end;  // step -> end time
  for (const auto& s : steps) t_end[s.step] = s.t_end_ns;
  if (t_end.empty() || t_end.rbegin()->first < last) return -1;
  // The last recorded step at or before first - 1 and at or before last.
  auto a = t_end.upper_bound(first - 1);
  auto b = t_end.upper_bound(last);
  if (a == t_end.begin() || b == t_end.begin()) return -1;
  --a, --b;
  if (b->first <= a->first) return -1;
  return (b->second - a->second) / 1e6 / static_cast<double>(b->first - a->first);
}

double block_spread(const std::vector<run::StepRecord>& steps, int64_t first, int64_t last) {
  // Eighths of the range; the fastest and the slowest are left out (a burst of workers starting
  // late, one stall), the rest's range over their median is how much the run varies by itself.
  constexpr int kBlocks = 8;
  const int64_t n = last - first + 1;
  if (n < 2 * kBlocks) return -1;
  std::vector<double> ms;
  for (int b = 0; b < kBlocks; ++b) {
    double m = mean_step_ms(steps, first + n * b / kBlocks, first + n * (b + 1) / kBlocks - 1);
    if (m <= 0) return -1;
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  double median = (ms[kBlocks / 2 - 1] + ms[kBlocks / 2]) / 2;
  return (ms[kBlocks - 2] - ms[1]) / median;
}

std::pair<int64_t, int64_t> measured_range(int64_t steps) {
  // Warm-up first (allocator, worker start-up, compilation); then up to the step before the
  // profiler window (the last kVerifyProfileSteps steps before the final one).
  return {th::kVerifyWarmupSteps + 1, steps - th::kVerifyProfileSteps - 1};
}

std::string settings_text(const std::vector<run::Override>& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

namespace {

// The speedup a finding predicts for its fix: its model's step over the step now when the rule
// gives one (a fix predicted to slow the step down shows as < 1x), else 1 / (1 - recoverable).
double predicted(const diagnose::Finding& f) {
  double now = -1, then = -1;
  for (const auto& e : f.evidence) {
    if (e.name == "step_ms") now = e.value;
    if (e.name == "predicted_step_ms") then = e.value;
  }
  return now > 0 && then > 0 ? now / then : diagnose::speedup(f.recoverable_fraction);
}

std::string not_applied_text(const std::vector<run::OverrideOutcome>& outcomes) {
  std::string s;
  for (const auto& o : outcomes)
    if (!o.applied) s += (s.empty() ? "" : "; ") + o.key + ": " + o.reason;
  return s;
}

void measure(VerifyRun& v, const std::vector<run::StepRecord>& steps, int64_t first, int64_t last) {
  v.step_ms = mean_step_ms(steps, first, last);
  v.spread = block_spread(steps, first, last);
  if (v.step_ms < 0)
    v.problem = v.exit_code != 0 ? fmt::format("the run failed (exit status {}) after {} steps{}", v.exit_code, v.steps,
                                               v.failure.empty() ? "" : ": " + v.failure)
                                 : fmt::format("the run ended after {} steps, before step {}", v.steps, last);
}

}  // namespace

bool patch_reproduces(double patched_ms, double set_ms, double tolerance) {
  // One-sided: a patched copy faster than the --set run has its gain (load only slows a run).
  return patched_ms > 0 && set_ms > 0 && patched_ms <= (1 + tolerance) * set_ms;
}

namespace {

void patch_and_measure(const VerifyOptions& opt, VerifyResult& r, const run::AgentSummary& agent) {
  VerifyPatch& p = *r.patch;
  p.file = fs::absolute(opt.patch_file).lexically_normal().string();
  p.tolerance = kPatchTolerance;
  const std::string cwd = fs::current_path().string();
  // The fixes that measured a gain with every setting applied go into the patch.
  PatchPlan plan;
  const VerifyFix* single = nullptr;
  const std::string script = command_script(opt.command, cwd);
  for (const auto& f : r.fixes) {
    if (f.measured_speedup <= 1) {
      p.notes.push_back(f.measured_speedup > 0
                            ? fmt::format("{}: not in the patch: its --set run measured no gain ({:.2f}x)", f.finding, f.measured_speedup)
                            : fmt::format("{}: not in the patch: its --set run was not measured", f.finding));
      continue;
    }
    std::vector<run::Override> applied;
    for (const auto& o : f.run.outcomes)
      if (o.applied) applied.emplace_back(o.key, o.value);
      else p.notes.push_back(fmt::format("{}: {}={} is not in the patch: not applied at run time ({})", f.finding, o.key, o.value, o.reason));
    size_t before = plan.edits.size();
    plan_fix(f.finding, applied, agent.evidence, script, plan);
    if (plan.edits.size() > before || std::any_of(plan.edits.begin(), plan.edits.end(), [&](const PatchEdit& e) { return e.fix == f.finding; })) {
      p.fixes.push_back(f.finding);
      single = &f;
    }
  }
  for (const auto& n : plan.notes) p.notes.push_back(n);
  if (plan.edits.empty()) {
    bool gained = std::any_of(r.fixes.begin(), r.fixes.end(), [](const VerifyFix& f) { return f.measured_speedup > 1; });
    p.problem = gained ? "no measured fix has a recorded line of your code to be written at (see the notes)"
                       : "no fix measured a gain with --set, so none is written (see the notes)";
    return;
  }
  // The --set run the patched copy must reproduce: the fix's own, or "all" when it holds several.
  const VerifyFix* target = p.fixes.size() == 1 ? single : (r.all ? &*r.all : nullptr);
  if (target) {
    p.compared_with = target->finding;
    p.set_step_ms = target->run.step_ms;
    p.set_speedup = target->measured_speedup;
    p.predicted_speedup = target->predicted_speedup;
  }

  std::string python = !agent.executable.empty() ? agent.executable : "python3";
  std::string spec_path = r.out_dir + "/patch-spec.json", diff_path = r.out_dir + "/fix.diff";
  std::ofstream(spec_path) << patch_spec_json(cwd, diff_path, plan.edits);
  PatcherOutput out = run_patcher(python, run::locate_agent_dir(), spec_path);
  if (!out.problem.empty()) {
    p.problem = out.problem;
    return;
  }
  p.files = out.files;
  for (auto& e : out.edits) p.edits.push_back({e.fix, e.file, e.what, e.line});
  p.refused = out.refused;
  {
    std::ifstream in(diff_path, std::ios::binary);
    p.diff.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (p.diff.empty()) {
    p.problem = "no edit could be written (each site's reason is listed)";
    return;
  }
  // The patched copy: the project folder without verify's own output.
  std::string copy = r.out_dir + "/patched";
  say(opt, fmt::format("patch: {} edit{} in {}; applying it to a copy of {} and running it", p.edits.size(),
                       p.edits.size() == 1 ? "" : "s", fmt::join(p.files, ", "), cwd));
  // The copy keeps the folder's name and its parents' (patched/tree/lt/ex/basics), each beside
  // links to the original's siblings at that level, so that `../data` and `../../Datasets` read
  // what the original's do. No `.git` is copied: git in the copy never finds the user's repository.
  const std::string project = mirrored_copy_path(cwd, copy + "/tree", kMirroredLevels).string();
  std::string why = copy_project(cwd, project, {r.out_dir, cwd + "/trainscope-runs", cwd + "/.git"});
  if (why.empty()) link_ancestors(cwd, project, kMirroredLevels);
  if (why.empty()) why = apply_patch(project, diff_path);
  if (!why.empty()) {
    p.problem = "the patch was not measured: " + why;
    return;
  }
  std::vector<std::string> cmd = command_in_copy(opt.command, cwd, project);
  auto patched_run = [&](const std::string& dir) {
    std::vector<run::StepRecord> s;
    std::optional<diagnose::Diagnosis> d;
    VerifyRun v;
    try {
      v = one_run(opt, "patched", dir, {}, s, d, &cmd, project);
    } catch (const std::exception& e) {
      v.label = "patched";
      v.problem = e.what();
    }
    measure(v, s, r.first_step, r.last_step);
    return v;
  };
  auto judge = [&] {
    p.measured_speedup = p.run.step_ms > 0 ? r.baseline.step_ms / p.run.step_ms : -1;
    // Two timed runs agree within what either run varies by itself, and never closer than
    // kPatchTolerance: the spread verify reports beside them.
    if (target) p.tolerance = std::max({kPatchTolerance, target->run.spread, p.run.spread});
    p.reproduced = patch_reproduces(p.run.step_ms, p.set_step_ms, p.tolerance);
  };
  p.run = patched_run(copy + "/run");
  judge();
  if (!p.reproduced && p.run.step_ms > 0 && target) {
    // Other work on the machine slows one run now and then: a patch is refused only when a second
    // run of the copy misses too (the faster of the two counts).
    say(opt, fmt::format("patched copy: {:.2f} ms per step against the --set run's {:.2f} ms: running it once more",
                         p.run.step_ms, p.set_step_ms));
    VerifyRun again = patched_run(copy + "/run-2");
    if (again.step_ms > 0 && again.step_ms < p.run.step_ms) p.run = std::move(again);
    judge();
  }
  say(opt, p.run.step_ms > 0 ? fmt::format("patched copy: {:.2f} ms per step, {:.2f}x (--set: {:.2f}x)", p.run.step_ms,
                                           p.measured_speedup, p.set_speedup)
                             : "patched copy: not measured: " + p.run.problem);
  if (p.run.step_ms <= 0) {
    p.problem = "the patched copy was not measured: " + p.run.problem;
  } else if (!target) {
    p.problem = "no --set run holds exactly the patch's fixes to compare the patched copy with";
  } else if (!p.reproduced) {
    p.problem = fmt::format("the patched copy measured {:.2f} ms per step, the --set run {:.2f} ms: more than {:.0f}% slower ("
                            "the spread of the runs), so the patch does not reproduce the measured gain",
                            p.run.step_ms, p.set_step_ms, 100 * p.tolerance);
  } else {
    std::error_code ec;
    fs::copy_file(diff_path, p.file, fs::copy_options::overwrite_existing, ec);
    if (ec) p.problem = fmt::format("{}: cannot write the patch: {}", p.file, ec.message());
    else p.written = true;
  }
}

}  // namespace

std::vector<const diagnose::Finding*> fixes_to_try(const diagnose::Diagnosis& d, int top,
                                                  std::vector<std::string>& notes) {
  std::vector<const diagnose::Finding*> chosen;
  std::vector<std::string> seen;
  int rank = 0;
  for (const auto& f : d.findings) {
    if (rank++ >= top) continue;
    if (f.outside_step && !f.fix_settings.empty()) {
      // Its time is the run's, outside the steps verify measures (worker-restarts: the waits at
      // each pass's start): a step-time ratio would not show it.
      notes.push_back(fmt::format("{}: its gain is outside the steps verify measures; try it with trainscope run --set "
                                  "{}, then trainscope compare the two runs' time accounts",
                                  f.id, settings_text(f.fix_settings)));
      continue;
    }
    if (f.fix_settings.empty()) {
      if (f.id != "compute-bound") {
        // No setting fixes it, so no patch either: the line to change, as the finding names it.
        std::string at;
        for (const auto& site : f.sites)
          if (!site.path.empty() && site.line > 0) {
            at = fmt::format(": change {}:{}{}", site.path, site.line, site.note.empty() ? "" : " (" + site.note + ")");
            break;
          }
        notes.push_back(fmt::format("{}: its fix is a code change trainscope cannot apply at run time{}", f.id, at));
      }
      continue;
    }
    std::string key = settings_text(f.fix_settings);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    chosen.push_back(&f);
  }
  return chosen;
}

VerifyResult run_verify(const VerifyOptions& opt) {
  if (opt.command.empty()) throw UserError("verify: no command given (usage: trainscope verify [options] -- COMMAND ...)");
  VerifyResult r;
  r.command = opt.command;
  r.steps = opt.steps;
  r.out_dir = opt.out_dir.empty() ? default_out_dir() : opt.out_dir;
  std::error_code ec;
  fs::create_directories(r.out_dir, ec);
  if (ec || !fs::is_directory(r.out_dir))
    throw UserError(r.out_dir + ": cannot create the output directory: " + ec.message());
  r.out_dir = fs::absolute(r.out_dir).lexically_normal().string();
  if (!opt.patch_file.empty()) {
    // Said before the runs, not after them: where FILE goes must be a writable folder.
    fs::path dir = fs::absolute(opt.patch_file).parent_path();
    if (!fs::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0)
      throw UserError(opt.patch_file + ": --patch: the folder " + dir.string() + " does not exist or is not writable");
    if (fs::is_directory(opt.patch_file, ec)) throw UserError(opt.patch_file + ": --patch: is a folder, not a file");
  }
  std::tie(r.first_step, r.last_step) = measured_range(opt.steps);

  // 1. Baseline and its diagnosis.
  say(opt, fmt::format("baseline run ({} steps)", opt.steps));
  std::vector<run::StepRecord> steps;
  std::optional<diagnose::Diagnosis> diag;
  run::AgentSummary base_agent;
  r.baseline = one_run(opt, "baseline", r.out_dir + "/baseline", {}, steps, diag, nullptr, "", &base_agent);
  if (r.baseline.steps == 0)
    throw UserError(fmt::format("verify: the baseline run made no training steps (exit status {}); see {}",
                                r.baseline.exit_code, r.baseline.out_dir));
  if (r.baseline.steps < opt.steps) {
    // The script ended by itself first: measure what every run can reach.
    r.last_step = std::min(r.last_step, r.baseline.steps);
    r.notes.push_back(fmt::format("the script ended by itself after {} steps (--steps {}): runs are measured over "
                                  "steps {}-{}",
                                  r.baseline.steps, opt.steps, r.first_step, r.last_step));
  }
  if (r.last_step - r.first_step + 1 < th::kVerifyMinMeasuredSteps)
    throw UserError(fmt::format("verify: only {} steps after warm-up (steps {}-{}); at least {} are needed: give the "
                                "script more steps (--steps, and its own step count)",
                                std::max<int64_t>(0, r.last_step - r.first_step + 1), r.first_step, r.last_step,
                                th::kVerifyMinMeasuredSteps));
  measure(r.baseline, steps, r.first_step, r.last_step);
  if (r.baseline.step_ms <= 0) throw UserError("verify: the baseline run was not measured: " + r.baseline.problem);
  say(opt, fmt::format("baseline: {:.2f} ms per step (steps {}-{}), {} finding{}", r.baseline.step_ms, r.first_step,
                       r.last_step, diag ? diag->findings.size() : 0, diag && diag->findings.size() == 1 ? "" : "s"));

  // 2. The fixes to try: the top findings' run-time settings, each set once.
  std::vector<const diagnose::Finding*> chosen;
  if (diag) {
    for (const auto& f : diag->findings) r.baseline_titles.push_back(fmt::format("{} ({})", f.title, f.id));
    chosen = fixes_to_try(*diag, opt.top, r.notes);
  }
  int total = static_cast<int>(chosen.size()) + (chosen.size() >= 2 ? 1 : 0);
  int i = 0;
  auto try_fix = [&](VerifyFix& fx, const std::string& dir) {
    say(opt, fmt::format("[{}/{}] {}: --set {}", ++i, total, fx.finding, settings_text(fx.settings)));
    std::vector<run::StepRecord> s;
    std::optional<diagnose::Diagnosis> d;
    try {
      fx.run = one_run(opt, fx.finding, dir, fx.settings, s, d);
    } catch (const std::exception& e) {
      fx.run.label = fx.finding;
      fx.run.problem = e.what();
      return;
    }
    measure(fx.run, s, r.first_step, r.last_step);
    if (fx.run.step_ms > 0) fx.measured_speedup = r.baseline.step_ms / fx.run.step_ms;
    fx.not_applied = not_applied_text(fx.run.outcomes);
    say(opt, fx.run.step_ms > 0 ? fmt::format("{}: {:.2f} ms per step, {:.2f}x (predicted {:.2f}x)", fx.finding,
                                              fx.run.step_ms, fx.measured_speedup, fx.predicted_speedup)
                                : fx.finding + ": not measured: " + fx.run.problem);
  };
  for (const auto* f : chosen) {
    VerifyFix fx;
    fx.finding = f->id;
    fx.title = f->title;
    fx.settings = f->fix_settings;
    fx.code = f->fix_code;
    fx.predicted_speedup = predicted(*f);
    try_fix(fx, fmt::format("{}/fix-{}-{}", r.out_dir, r.fixes.size() + 1, f->id));
    fx.resolved = fx.run.step_ms > 0 && !still_costs(fx.run, f->id, r.baseline.step_ms);
    fx.still_charged_ms = still_charged_ms(fx.run, {f->id});
    r.fixes.push_back(std::move(fx));
  }
  // 3. All of them at once (the first finding's value wins where two set the same key).
  if (chosen.size() >= 2) {
    VerifyFix all;
    all.finding = "all";
    all.title = "every fix above at once";
    all.predicted_speedup = 1;
    double removed = 0;  // share of the step the fixes remove together
    std::vector<std::string> ids;
    for (const auto* f : chosen) {
      for (const auto& kv : f->fix_settings)
        if (std::none_of(all.settings.begin(), all.settings.end(), [&](const run::Override& o) { return o.first == kv.first; }))
          all.settings.push_back(kv);
      // The step's account gives each fix time no other claims (docs/FINDINGS.md): their shares
      // of the step add, so together they give 1 / (1 - the sum), more than the product.
      removed += 1 - 1 / predicted(*f);
      ids.push_back(f->id);
    }
    all.predicted_speedup = 1 / (1 - std::clamp(removed, 0.0, 0.99));
    try_fix(all, r.out_dir + "/all");
    all.resolved = all.run.step_ms > 0 && std::none_of(ids.begin(), ids.end(), [&](const std::string& id) {
                     return still_costs(all.run, id, r.baseline.step_ms);
                   });
    all.still_charged_ms = still_charged_ms(all.run, ids);
    r.all = std::move(all);
  }

  // 4. --patch: the measured fixes written into the user's code, applied to a copy, measured again.
  if (!opt.patch_file.empty()) {
    r.patch = VerifyPatch{};
    patch_and_measure(opt, r, base_agent);
  }

  // The verdict: the first fix's outcome, or why nothing was tried.
  if (!r.fixes.empty()) {
    const auto& f = r.fixes.front();
    r.verdict = f.measured_speedup > 0
                    ? fmt::format("{}: {} measured {:.1f}x, predicted {:.1f}x{}", f.finding, settings_text(f.settings),
                                  f.measured_speedup, f.predicted_speedup, f.resolved ? " (resolved: what it still costs is under 5% of the baseline's step)" : "")
                    : fmt::format("{}: {} not measured: {}", f.finding, settings_text(f.settings), f.run.problem);
  } else if (diag && !diag->findings.empty()) {
    r.verdict = fmt::format("nothing to verify: none of the top findings has a fix trainscope can apply at run time "
                            "(top: {})", diag->findings.front().id);
  } else {
    r.verdict = "nothing to verify: the baseline run has no findings";
  }
  return r;
}

}  // namespace ts::experiment
