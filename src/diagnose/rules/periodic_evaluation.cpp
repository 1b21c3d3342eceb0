// periodic-evaluation: forward passes outside training (eval mode or autograd off: a periodic
// evaluation, a framework's validation loop, sampling) take a large share of the run's wall time.
// Evidence: the run's time account (agent phases.py): eval_s >= kEvalRunPct of the run, in >= 2
// spans, less the evaluations that ran only after the last training step (a final test,
// predictions: once, whatever the schedule; agent sites' loop_ms, of the lines that call the
// evaluation where recorded, else of its own lines). Spans after every step are
// part of the step (a frozen teacher, an EMA copy's targets) unless they call the model the loop
// trains: that is evaluation each step (a full-batch graph network scoring its train and
// validation masks every epoch).
// Gain, on the run's scale: an evaluation's cost is the batches it runs, so it scales with how
// often it runs. Every k >= 2 steps: every 2k steps gives back half of eval_s. Every k < 2 steps:
// every 10 steps keeps k/10 of it.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

namespace {

// The evaluation's lines, split by whether a training step ever followed them. A line that ran
// only after the last step (Lightning's trainer.test / predict after fit, a final HF evaluate())
// runs once whatever the schedule: evaluating less often does not change it.
struct EvalLines {
  std::vector<const CodeSite*> recurring, once;  // costliest first
  double recurring_ms = 0, once_ms = 0;
};

EvalLines eval_lines(const Evidence& ev) {
  EvalLines l;
  for (const auto& s : ev.agent->sites) {
    if (s.role != "eval" || s.file.empty()) continue;
    const bool once = s.loop_ms == 0 && s.host_ms > 0;  // -1: an agent that did not record it
    (once ? l.once : l.recurring).push_back(&s);
    (once ? l.once_ms : l.recurring_ms) += s.host_ms;
  }
  for (auto* v : {&l.recurring, &l.once})
    std::stable_sort(v->begin(), v->end(), [](const CodeSite* a, const CodeSite* b) { return a->host_ms > b->host_ms; });
  return l;
}

// What evaluating less often changes, in the lines' own time: the evaluations a training step
// followed against those that ran only after the last one. Split by the lines that start each
// evaluation where the agent recorded them (the loop's calls, else the script's callback lines),
// since one evaluation function often serves both (pytorch/examples' word_language_model: its
// evaluate() scores the validation set after each epoch and the test set once after training, all
// at one forward line, whose time then mixes the two); a call line that a step followed even once
// recurs. By the evaluation's own lines where no call line covers them (90% of their time).
struct EvalSplit {
  double recurring_ms = 0, once_ms = 0;
  std::vector<const CodeSite*> once;  // the lines that ran only after training, costliest first
};

EvalSplit eval_split(const Evidence& ev, const EvalLines& l) {
  const double lines_ms = l.recurring_ms + l.once_ms;
  for (const char* role : {"eval_call", "eval_hook"}) {
    EvalSplit s;
    for (const auto& c : ev.agent->sites) {
      if (c.role != role || c.file.empty() || c.host_ms <= 0 || c.loop_ms < 0) continue;
      if (c.loop_ms == 0) s.once_ms += c.host_ms, s.once.push_back(&c);
      else s.recurring_ms += c.host_ms;
    }
    if (s.recurring_ms + s.once_ms >= 0.9 * lines_ms && s.recurring_ms + s.once_ms > 0) {
      std::stable_sort(s.once.begin(), s.once.end(),
                       [](const CodeSite* a, const CodeSite* b) { return a->host_ms > b->host_ms; });
      return s;
    }
  }
  return {l.recurring_ms, l.once_ms, l.once};
}

// The recurring lines, costliest first. One evaluation often runs several things (a validation
// loss, a benchmark, sampling), each a line of its own; the agent charges each line the span's time
// from its call to the next one, so the costliest is what to run less often or on fewer batches.
void point_at_evaluations(Finding& f, const EvalLines& l) {
  constexpr size_t kMaxLines = 3;
  const auto& lines = l.recurring;
  for (size_t i = 0; i < lines.size() && i < kMaxLines; ++i) {
    const CodeSite& s = *lines[i];
    // A callback that calls the model itself: its line is the script's line above already.
    if (std::any_of(f.sites.begin(), f.sites.end(), [&](const SiteRef& r) { return r.file == s.file && r.line == s.line; }))
      continue;
    if (l.recurring_ms <= 0) {  // an agent that timed no line: the first evaluation call's
      f.sites.push_back(site_ref(s, "the evaluation's forward call"));
      break;
    }
    if (lines.size() > 1 && s.host_ms < 0.01 * l.recurring_ms) break;  // under 1%: not where the time is
    f.sites.push_back(site_ref(
        s, fmt::format("{} call{}, {:.1f} s{}", s.calls, s.calls == 1 ? "" : "s", s.host_ms / 1e3,
                       lines.size() > 1 ? fmt::format(": {:.0f}% of the evaluation", 100 * s.host_ms / l.recurring_ms)
                                        : std::string())));
  }
}

// The lines that call a recurring evaluation, of one role ("eval_call" or "eval_hook"), costliest
// first; only those a training step followed.
std::vector<const CodeSite*> calling_lines(const Evidence& ev, const char* role) {
  std::vector<const CodeSite*> calls;
  for (const auto& s : ev.agent->sites)
    if (s.role == role && !s.file.empty() && s.loop_ms != 0) calls.push_back(&s);
  std::stable_sort(calls.begin(), calls.end(), [](const CodeSite* a, const CodeSite* b) { return a->host_ms > b->host_ms; });
  return calls;
}

// The training loop's lines that call the evaluation (the agent's "eval_call" sites: where the
// step's own function, or the loop's, calls a function of the user's that evaluates, or, for an
// evaluation written inline in the loop, its forward's own line): the line to put under
// `if step % K == 0:`. Where the loop lies in a module of the user's and calls back
// into the script they ran (minGPT's Trainer.run and its on_batch_end callback), the script's
// lines on the way ("eval_hook") come first: the loop's line runs every callback, the script's is
// where it chose to evaluate, and the fix goes there.
void point_at_loop_calls(Finding& f, const Evidence& ev, bool each_step) {
  constexpr size_t kMaxLines = 2;
  const std::vector<const CodeSite*> hooks = calling_lines(ev, "eval_hook");
  const std::vector<const CodeSite*> calls = calling_lines(ev, "eval_call");
  const std::vector<const CodeSite*>& where = hooks.empty() ? calls : hooks;
  // The fix's code around the user's own calls, in their order in the file, where they are one
  // function's lines (GAT's two test(...) calls in train_iter).
  std::vector<const CodeSite*> shown(where.begin(), where.begin() + std::min(where.size(), kMaxLines));
  const bool one_function = !shown.empty() && std::all_of(shown.begin(), shown.end(), [&](const CodeSite* s) {
    return !s->code.empty() && s->file == shown[0]->file && s->function == shown[0]->function;
  });
  // The user's own condition that runs one of these lines (the costliest such) every K steps, K
  // doubled: the fix at their line (makemore's `if step > 0 and step % 500 == 0:` -> `% 1000`).
  const CodeSite* guarded = nullptr;
  for (size_t i = 0; !each_step && !guarded && i < where.size() && i < kMaxLines; ++i)
    if (where[i]->guard_line > 0 && !where[i]->guard_doubled.empty()) guarded = where[i];
  if (guarded) {
    const std::string now = fmt::format("if {}:", guarded->guard_doubled);
    const std::string& shown_file = guarded->path.empty() ? guarded->file : guarded->path;
    const std::string was = fmt::format("# was: if {}: ({}:{})", guarded->guard, shown_file, guarded->guard_line);
    // A long condition (llm.c's three-line test, as one line): the old one on a line of its own
    // above, so that no report's wrapping puts the comment among the code.
    constexpr size_t kOneLine = 100;
    f.fix_code = now.size() + 3 + was.size() <= kOneLine ? now + "   " + was : was + "\n" + now;
    for (const CodeSite* s : where)
      if (s->file == guarded->file && s->guard_line == guarded->guard_line && !s->code.empty())
        f.fix_code += "\n    " + s->code;
  } else if (one_function) {
    std::sort(shown.begin(), shown.end(), [](const CodeSite* a, const CodeSite* b) { return a->line < b->line; });
    // Unguarded, the lines run at every pass of their loop: the fix counts with its variable.
    const std::string& v = shown[0]->loop_var;
    const bool counted = !v.empty() && std::all_of(shown.begin(), shown.end(), [&](const CodeSite* s) {
      return s->loop_var == v && s->guard_line <= 0;
    });
    if (counted)
      f.fix_code = each_step ? fmt::format("if {} % 10 == 0:   # evaluate (and log) at one {} in 10, not at every one", v, v)
                             : fmt::format("if {} % 2 == 0:   # evaluate at every other {}", v, v);
    else
      f.fix_code = each_step ? "if step % 10 == 0:   # evaluate (and log) every 10 steps, not after every one"
                             : "if step % (2 * eval_interval) == 0:   # or: fewer eval batches";
    for (const CodeSite* s : shown) f.fix_code += "\n    " + s->code;
  }
  const char* how = each_step ? "run it every 10 steps, not after every one" : "run it half as often";
  // A line under a condition that runs it every K steps: that condition, and K doubled.
  auto how_at = [&](const CodeSite& s) {
    if (each_step || s.guard_line <= 0 || s.guard_doubled.empty()) return std::string(how);
    return fmt::format("it runs when `{}` (line {}): `{}` runs it half as often", s.guard, s.guard_line,
                       s.guard_doubled);
  };
  const CodeSite* loop = calls.empty() ? nullptr : calls[0];
  for (size_t i = 0; i < hooks.size() && i < kMaxLines; ++i)
    f.sites.push_back(site_ref(
        *hooks[i], fmt::format("your script starts the evaluation here ({} pass{}, {:.1f} s){}: {}", hooks[i]->calls,
                               hooks[i]->calls == 1 ? "" : "es", hooks[i]->host_ms / 1e3,
                               loop ? fmt::format(", called back from the loop at {}:{}",
                                                  loop->path.empty() ? loop->file : loop->path, loop->line)
                                    : std::string(),
                               how_at(*hooks[i]))));
  // A call line that is the evaluation's own forward: the evaluation is written inline in the loop.
  auto inline_eval = [&](const CodeSite& c) {
    return std::any_of(ev.agent->sites.begin(), ev.agent->sites.end(),
                       [&](const CodeSite& s) { return s.role == "eval" && s.file == c.file && s.line == c.line; });
  };
  for (size_t i = 0; i < calls.size() && i < kMaxLines; ++i)
    f.sites.push_back(site_ref(*calls[i], fmt::format("the loop {} here ({} pass{}, {:.1f} s): {}",
                                                      inline_eval(*calls[i]) ? "evaluates" : "calls the evaluation",
                                                      calls[i]->calls, calls[i]->calls == 1 ? "" : "es",
                                                      calls[i]->host_ms / 1e3,
                                                      hooks.empty() ? how_at(*calls[i])
                                                                    : "it calls back into your script after every "
                                                                      "step, and the script decides")));
}

}  // namespace

std::optional<Finding> periodic_evaluation(const Evidence& ev) {
  if (!ev.agent || !ev.agent->time_account) return std::nullopt;
  const TimeAccount& t = *ev.agent->time_account;
  if (t.job_s() <= 0 || t.eval_spans < 2) return std::nullopt;  // one evaluation (at the end) is not periodic
  // What evaluating less often changes: the lines that ran between training steps, not those that
  // ran once after the last one. Their share of the lines' time scales the account's evaluation.
  // The evaluation's loaders waiting for their workers to start are worker-restarts' to claim.
  const EvalLines lines = eval_lines(ev);
  const EvalSplit split = eval_split(ev, lines);
  const double lines_ms = split.recurring_ms + split.once_ms;
  const double own_s = std::max(0.0, t.eval_s - t.eval_start_s);
  const double once_s = lines_ms > 0 ? own_s * split.once_ms / lines_ms : 0;
  const double eval_s = own_s - once_s;
  const double pct = 100 * eval_s / t.job_s();
  if (pct < th::kEvalRunPct) return std::nullopt;
  const bool each_step = t.steps > 0 && t.eval_spans * 2 > t.steps;
  if (each_step && t.eval_spans_trained * 2 <= t.steps) return std::nullopt;  // a teacher, an EMA's targets
  Finding f = make("periodic-evaluation", Bottleneck::Config, "agent");
  f.outside_step = true;
  // The spans as they ran, less their loaders' worker starts, so that passes x size is the share
  // the title prints (super_resolution: "29%: 3 passes of 2.2 s" was 33% of the run).
  const double per_span = own_s / t.eval_spans;
  const double every = t.steps > 0 ? double(t.steps) / t.eval_spans : -1;
  add(f, "eval_s", eval_s, "s");
  if (once_s > 0) add(f, "eval_once_s", once_s, "s");
  if (t.eval_pre_s > 0) add(f, "eval_before_first_step_s", t.eval_pre_s, "s");
  add(f, "eval_pct_of_run", pct, "%");
  add(f, "eval_spans", t.eval_spans, "count");
  if (once_s <= 0) add(f, "eval_s_per_span", per_span, "s");  // else passes mix both kinds (as the title)
  add(f, "eval_forward_calls", t.eval_calls, "count");
  if (every > 0) add(f, "steps_per_eval", every, "count");
  add(f, "run_s", t.job_s(), "s");
  // The share of the evaluation the fix gives back: half (every 2k steps), or every 10 steps; of
  // the evaluation between training steps: a pass before the first step (step 0 is a multiple of
  // any K) runs whatever the interval. llm.c's train_gpt2.py, 30 steps: predicted 1.2x with that
  // pass, measured 1.11x with the interval doubled (docs/BENCHMARKS.md, session 47).
  const double back = each_step ? 1 - std::max(every, 1.0) / 10 : 0.5;
  const double pre_s = std::clamp(t.eval_pre_s, 0.0, eval_s);
  const double gives_back = back * (eval_s - pre_s);
  f.run_fraction = std::clamp(gives_back / t.job_s(), 0.0, 0.95);
  f.recoverable_fraction = f.run_fraction;
  f.severity = severity_for(f.run_fraction);
  f.confidence = 0.9;
  if (each_step) {
    f.title = fmt::format("Evaluation takes {:.0f}% of the run: the trained model is evaluated after every step "
                          "({} passes of {:.1f} ms)",
                          pct, t.eval_spans, 1e3 * per_span);
    f.gain = fmt::format("evaluating every 10 steps gives back {:.1f} s of the {:.1f} s run: the run {}",
                         gives_back, t.job_s(), gain_text(f.run_fraction));
  } else {
    // Spans that mix recurring and one-off lines have no size per pass worth printing.
    f.title = once_s > 0 ? fmt::format("Evaluation during training takes {:.0f}% of the run{}", pct,
                                       every > 0 ? fmt::format(", one pass every {:.0f} training steps", every) : "")
                         : fmt::format("Evaluation takes {:.0f}% of the run: {} passes of {:.1f} s{}", pct, t.eval_spans,
                                       per_span, every > 0 ? fmt::format(", one every {:.0f} training steps", every) : "");
    // Half the batches would halve the pass before the first step too: said, not counted.
    f.gain = pre_s >= 0.05 * eval_s
                 ? fmt::format("evaluating half as often gives back {:.1f} s of the {:.1f} s run (the {:.1f} s "
                               "before the first training step runs whatever the interval; on half the batches, "
                               "{:.1f} s): the run {}",
                               gives_back, t.job_s(), pre_s, back * eval_s, gain_text(f.run_fraction))
                 : fmt::format("evaluating half as often (or on half the batches) gives back {:.1f} s of the {:.1f} s "
                               "run: the run {}",
                               gives_back, t.job_s(), gain_text(f.run_fraction));
  }
  f.explanation = fmt::format(
      "{:.1f} s of the run's {:.1f} s went to forward passes outside training (the model in eval mode, "
      "model.eval()): no training happens meanwhile. An evaluation's cost is the batches it "
      "runs, so it scales with how often it runs and on how many batches.{}{}{}",
      eval_s, t.job_s(),
      t.eval_start_s >= 0.05
          ? fmt::format(" Not counted here: the {:.1f} s its DataLoaders spent starting their worker processes at each "
                        "pass (persistent_workers=True keeps them between passes; that time is worker-restarts').",
                        t.eval_start_s)
          : "",
      each_step ? " Here the model the loop trains is evaluated after each of its steps: metrics that are printed or "
                  "logged every N steps need computing only then."
                : "",
      once_s > 0 ? fmt::format(" Another {:.1f} s ran once, after the last training step ({}:{}{}): evaluating less "
                               "often leaves it as it is.",
                               once_s, split.once[0]->path.empty() ? split.once[0]->file : split.once[0]->path,
                               split.once[0]->line, split.once.size() > 1 ? " and others" : "")
                 : "");
  f.fix =
      "Evaluate less often or on a fixed subset of the validation set (nanoGPT: eval_interval/eval_iters; Hugging Face: "
      "eval_steps, eval_accumulation_steps; Lightning: val_check_interval, limit_val_batches), or evaluate saved "
      "checkpoints in a separate process.";
  f.fix_code = each_step ? "if step % 10 == 0:   # evaluate (and log) every 10 steps, not after every one\n    "
                           "evaluate(model)"
                         : "if step % (2 * eval_interval) == 0:   # or: fewer eval batches\n    evaluate(model)";
  if (const CodeSite* cfg = config_site(ev, "transformers")) {
    // eval_steps < 1 is a fraction of the run (Hugging Face TrainingArguments): not doubled here.
    const auto k = static_cast<long>(cfg->knob_number("eval_steps"));
    f.sites.push_back(site_ref(
        *cfg, k > 0 ? knob_note(*cfg, {{{"eval_steps", std::to_string(2 * k)}},
                                       fmt::format("half as many evaluations as eval_steps={}", k)})
                    : knob_note(*cfg, {{{"eval_steps", ""}}, "evaluate less often (or eval_strategy=\"epoch\")"})));
  } else if (const CodeSite* cfg = config_site(ev, "lightning")) {
    f.sites.push_back(site_ref(*cfg, "val_check_interval / limit_val_batches"));
  }
  // The lines that start the evaluation first (where the fix goes: `verify` names the first site
  // as the line to change), then the evaluation's own lines (where its time goes).
  point_at_loop_calls(f, ev, each_step);
  point_at_evaluations(f, lines);
  return f;
}

}  // namespace ts::diagnose::rules
