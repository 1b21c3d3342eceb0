// The partition, in the agent's three regions (phases.py keeps its totals at the first step's
// start and at the last step's end):
//   before the first step: start-up, less the compilation, evaluation and writes inside it;
//   the loop (first step's start to last step's end): training steps, less the data wait
//     (the steps' own, less the fetches of evaluation), compilation, evaluation and writes in it;
//   after the last step: other, less the same.
// trainscope's own profiler window (its start, stop and export, between two steps) comes out of
// whichever region it fell in: our cost, not the training's.
// Compilation, evaluation and checkpoints are then whole-run totals, each second counted once
// (phases.py takes the compilation inside an evaluation span out of the span).
#include "run/time_account.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "analysis/intervals.h"
#include "run/code_sites.h"

namespace ts::run {

namespace {

const TextRecord* latest_phases(const Records& r, pid_t pid) {
  const TextRecord* best = nullptr;
  for (const auto& t : r.texts) {
    if (t.kind != "phases" || t.pid != pid) continue;
    // The final one (at exit) wins; otherwise the latest by its own clock.
    if (!best || (t.get_int("final", 0) >= best->get_int("final", 0) && t.get_int("t", 0) >= best->get_int("t", 0)))
      best = &t;
  }
  return best;
}

// The job's other processes' step spans (ns): another trainer's (mnist_hogwild's trainers start and
// end one after another) and, apart from those, a process's that never trains (its steps marked by
// fetches or forwards: inference), which evaluates (its parent tests the model they shared once
// they join). The training process's own phases cannot see either. Overlapping spans count once.
struct OtherSpans {
  analysis::Intervals train, eval;  // merged; eval less the trainers'
  analysis::Intervals evaluators;   // one per non-training process, as it ran
};
OtherSpans other_spans(const Records& r, pid_t main_pid) {
  std::map<pid_t, int> best;
  for (const auto& [key, t] : r.step_totals) best[key.first] = std::max(best[key.first], key.second);
  OtherSpans o;
  for (const auto& [pid, level] : best) {
    const TextRecord* ph = pid == main_pid ? nullptr : latest_phases(r, pid);
    if (!ph) continue;
    const analysis::Interval span{ph->get_int("first_step_t", 0), ph->get_int("last_step_end_t", 0)};
    if (span.end <= span.begin) continue;
    (level >= static_cast<int>(StepSource::Backward) ? o.train : o.evaluators).push_back(span);
  }
  o.train = analysis::merged(std::move(o.train));
  o.eval = analysis::subtract(analysis::merged(o.evaluators), o.train);
  return o;
}

}  // namespace

std::optional<diagnose::TimeAccount> time_account(const Records& r, pid_t main_pid, double launch_mono_s,
                                                  double wall_s, double steady_step_ms) {
  const TextRecord* ph = latest_phases(r, main_pid);
  if (!ph || wall_s <= 0) return std::nullopt;
  const double first = ph->get_double("first_step_t", 0) / 1e9;
  double last = ph->get_double("last_step_end_t", 0) / 1e9;
  if (first <= 0) return std::nullopt;  // no step began
  // The loop's steps: the totals of the kind that counts last (a better marker takes over).
  const StepTotals* st = nullptr;
  int level = 0;
  for (auto it = r.step_totals.lower_bound({main_pid, 0}); it != r.step_totals.end() && it->first.first == main_pid; ++it)
    st = &it->second, level = it->first.second;
  // A job killed by a signal never sends its final record: the latest one was sent at a step
  // (16, 64, 256, every 1024th), and the steps after it are in the step records. The loop ends at
  // the last step's end; what fell between (an evaluation, say) stays in the loop's time.
  if (!ph->get_int("final", 0) && st && st->last_end_ns / 1e9 > last) last = st->last_end_ns / 1e9;
  // No backward, no optimizer: the steps are inference, and its forwards are the steps, not an
  // evaluation beside them.
  const bool trains = level >= static_cast<int>(StepSource::Backward);
  auto sec = [&](const char* k) { return std::max(0.0, ph->get_double(k, 0) / 1e9); };
  struct Split { double pre, in, post; };
  auto split = [&](const char* name) {
    const std::string n = name;
    const double tot = sec(n.c_str()), pre = std::min(tot, sec(("pre_" + n).c_str()));
    const double end = std::clamp(sec(("end_" + n).c_str()), pre, tot);
    return Split{pre, end - pre, tot - end};
  };
  const Split comp = split("compile_ns"), io = split("io_ns"), prof = split("profiler_ns"), queued = split("queued_ns");
  Split eval = trains ? split("eval_ns") : Split{0, 0, 0};
  const Split efetch = trains ? split("eval_fetch_ns") : Split{0, 0, 0};
  const double exit_s = launch_mono_s + wall_s;
  const double pre_wall = std::clamp(first - launch_mono_s, 0.0, wall_s);
  const double loop_end = last > first ? std::min(last, exit_s) : first;
  const double loop_wall = std::clamp(loop_end - std::max(first, launch_mono_s), 0.0, wall_s - pre_wall);
  const double post_wall = std::max(0.0, wall_s - pre_wall - loop_wall);
  // Before the training process's first step and after its last, what the job's other processes
  // did (what the training process did itself then is already in its own buckets: the rest only).
  // Which of several trainers is the training process must not move time between buckets.
  const OtherSpans others = trains ? other_spans(r, main_pid) : OtherSpans{};
  struct Edge { double train = 0; int evaluating = 0; };
  auto edge = [&](double from, double to, double rest, double& eval_part) {
    Edge e;
    const auto lo = static_cast<int64_t>(from * 1e9), hi = static_cast<int64_t>(to * 1e9);
    rest = std::max(0.0, rest);
    e.train = std::min(analysis::length_within(others.train, lo, hi) / 1e9, rest);
    eval_part += std::min(analysis::length_within(others.eval, lo, hi) / 1e9, rest - e.train);
    for (const auto& s : others.evaluators) e.evaluating += std::min(s.end, hi) > std::max(s.begin, lo) ? 1 : 0;
    return e;
  };
  const Edge pre_o = edge(launch_mono_s, std::max(launch_mono_s, first), pre_wall - comp.pre - eval.pre - io.pre - prof.pre, eval.pre);
  const Edge post_o = edge(loop_end, exit_s, post_wall - comp.post - eval.post - io.post - prof.post, eval.post);

  diagnose::TimeAccount a;
  a.total_s = wall_s;
  a.compile_s = std::min(wall_s, comp.pre + comp.in + comp.post);
  a.eval_s = eval.pre + eval.in + eval.post;
  a.checkpoint_s = io.pre + io.in + io.post;
  a.profiler_s = prof.pre + prof.in + prof.post;
  // The loop's fetch waits between its first step's start and its last step's end (agent phases.py
  // fetch_ns). The steps' own totals miss the first step's wait where a better marker took the loop
  // over after it (the optimizer after the first backward): the first fetch, which waits for the
  // workers to start (seconds where they are spawned and each imports torch), was counted as
  // training. The larger of the two: a killed job's latest phases record is older than its last
  // steps; an agent without fetch_ns has the steps' totals only.
  const double steps_data = std::max(split("fetch_ns").in, st ? st->data_wait_ns / 1e9 : 0.0);
  // The data wait leaves out the loop's own loading queued for a core (the DataLoader model must
  // not size workers for it); the account puts it back: the loop waited in next() all the same.
  a.data_queued_s = queued.in;
  a.data_wait_s = std::max(0.0, steps_data - efetch.in) + a.data_queued_s;
  // The first fetches over workers, less those of evaluation (a validation loader's workers
  // starting are evaluation's time, told apart in eval_start_s).
  const Split estart = trains ? split("eval_start_fetch_ns") : Split{0, 0, 0};
  a.data_start_s = std::clamp(split("start_fetch_ns").in - estart.in, 0.0, a.data_wait_s);
  auto count_in = [&](const char* k) {
    return std::max<int64_t>(0, ph->get_int(fmt::format("end_{}", k), 0) - ph->get_int(fmt::format("pre_{}", k), 0));
  };
  a.data_starts = std::max<int64_t>(0, count_in("start_fetches") - (trains ? count_in("eval_start_fetches") : 0));
  a.eval_start_s = std::min(a.eval_s, estart.pre + estart.in + estart.post);
  // Before the first training event: the first step begins at the first forward the agent sees, an
  // evaluation's at step 0 too, so the agent marks the evaluation closed before training began.
  a.eval_pre_s = trains ? std::min(a.eval_s, std::max(eval.pre, sec("eval_before_train_ns"))) : 0;
  a.before_first_step_s = std::max(0.0, pre_wall - comp.pre - eval.pre - io.pre - prof.pre - pre_o.train);
  a.train_steps_s = std::max(0.0, loop_wall - comp.in - eval.in - io.in - prof.in - a.data_wait_s) + pre_o.train + post_o.train;
  a.other_s = std::max(0.0, post_wall - comp.post - eval.post - io.post - prof.post - post_o.train);
  // Measurement edges (a span closed at exit, clocks read a few us apart) must not make the sum
  // exceed the wall time: the difference comes out of the largest of the measured-as-rest buckets.
  double sum = a.before_first_step_s + a.compile_s + a.train_steps_s + a.eval_s + a.checkpoint_s + a.data_wait_s +
               a.profiler_s + a.other_s;
  for (double* b : {&a.other_s, &a.train_steps_s, &a.before_first_step_s, &a.data_wait_s, &a.eval_s, &a.checkpoint_s,
                    &a.profiler_s}) {
    if (sum <= wall_s) break;
    const double cut = std::min(*b, sum - wall_s);
    *b -= cut;
    sum -= cut;
  }
  a.other_s += std::max(0.0, wall_s - sum);
  // The interpreter's exit: from the agent's final record (its atexit handler, which runs after the
  // script's own handlers) to the process's end, modules torn down and native destructors run (about
  // 0.3 s with torch imported on the 2-core VM). Part of other, named because a short run shows it.
  if (ph->get_int("final", 0)) {
    const double at_exit = ph->get_double("t", 0) / 1e9;
    if (at_exit >= loop_end) a.exit_s = std::clamp(exit_s - at_exit, 0.0, a.other_s);
  }
  // Of the run as it would be without us: trainscope's profiler window is not the job's time.
  a.goodput_pct = 100.0 * a.train_steps_s / std::max(1e-9, a.job_s());
  a.steps = st ? st->count : 0;
  a.eval_spans = trains ? ph->get_int("eval_spans", 0) + pre_o.evaluating + post_o.evaluating : 0;
  a.eval_spans_trained = trains ? ph->get_int("eval_spans_trained", 0) : 0;
  a.eval_calls = trains ? ph->get_int("eval_calls", 0) : 0;
  a.compile_frames = ph->get_int("compile_frames", 0);
  a.checkpoints = ph->get_int("io_n", 0);
  a.steady_step_s = steady_step_ms > 0 ? steady_step_ms / 1e3 : -1;
  return a;
}

void add_startup_profile(const Records& r, pid_t main_pid, const std::string& cwd, diagnose::AgentEvidence& ev) {
  if (!ev.time_account) return;
  const TextRecord* p = nullptr;
  for (const auto& t : r.texts)
    if (t.kind == "startup" && t.pid == main_pid) p = &t;
  if (!p) return;
  auto& a = *ev.time_account;
  const double n = p->get_double("samples", 0);
  if (n <= 0) return;
  a.startup_samples = static_cast<int64_t>(n);
  // Time-weighted (each sample charges the time since the previous one): seconds of the start-up.
  a.startup_import_s = std::min(a.before_first_step_s, p->get_double("import_ns", 0) / 1e9);
  for (int i = 0; i < 5; ++i) {
    const std::string file = p->get(fmt::format("file{}", i));
    if (file.empty()) break;
    diagnose::CodeSite s;
    s.role = "startup";
    s.file = file;
    s.path = shown_path(file, cwd);
    s.line = p->get_int(fmt::format("line{}", i), 0);
    s.function = p->get(fmt::format("func{}", i));
    s.host_ms = p->get_double(fmt::format("ns{}", i), 0) / 1e6;
    s.detail = fmt::format("{:.1f} s of the start-up's profile", s.host_ms / 1e3);
    s.code = p->get(fmt::format("text{}", i));  // read by the agent, as for every other site
    ev.sites.push_back(std::move(s));
  }
}

}  // namespace ts::run
