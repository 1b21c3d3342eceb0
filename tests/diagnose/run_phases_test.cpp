// The findings about the run's time outside the step (issue 40): periodic-evaluation and
// compile-cost on the run's time account, their thresholds, and one ranking with the step's
// findings on the run's scale (docs/FINDINGS.md, "The whole run accounted").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::find;
using test::code_site;

// A CPU loop of 200 steps of 20 ms (4 s), with `eval_s` of evaluation in `spans` passes and
// `compile_s` of compilation; 1 s before the first step.
Evidence accounted(double eval_s, int spans, double compile_s = 0, int64_t steps = 200) {
  Evidence ev;
  AgentEvidence a;
  a.steps = steps;
  a.step_ms = 20;
  a.step_mean_ms = 20;
  TimeAccount t;
  t.before_first_step_s = 1;
  t.train_steps_s = steps * 0.02;
  t.eval_s = eval_s;
  t.compile_s = compile_s;
  t.other_s = 0.2;
  t.total_s = t.before_first_step_s + t.train_steps_s + t.eval_s + t.compile_s + t.other_s;
  t.goodput_pct = 100 * t.train_steps_s / t.total_s;
  t.steps = steps;
  t.eval_spans = spans;
  t.eval_calls = spans * 16;
  t.compile_frames = compile_s > 0 ? 1 : 0;
  t.steady_step_s = 0.02;
  a.time_account = t;
  ev.agent = a;
  return ev;
}

TEST(PeriodicEvaluation, FiresAtAFifthOfTheRunNotAtTwoPercent) {
  // 1.3 s of 6.5 s: 20%.
  const Finding* f = nullptr;
  Diagnosis d = diagnose(accounted(1.3, 5));
  ASSERT_NE(f = find(d, "periodic-evaluation"), nullptr);
  const double total = 1 + 4 + 1.3 + 0.2;
  EXPECT_NEAR(f->run_fraction, 0.5 * 1.3 / total, 1e-9);  // the fix halves the evaluation
  EXPECT_TRUE(f->outside_step);
  // 0.11 s of 5.31 s: 2%.
  EXPECT_EQ(find(diagnose(accounted(0.11, 5)), "periodic-evaluation"), nullptr);
}

TEST(PeriodicEvaluation, ANoGradForwardInEveryStepIsPartOfTheStep) {
  // A frozen teacher: 200 spans in 200 steps, however large; and a single evaluation is not periodic.
  EXPECT_EQ(find(diagnose(accounted(2.0, 1)), "periodic-evaluation"), nullptr);
  EXPECT_EQ(find(diagnose(accounted(2.0, 200)), "periodic-evaluation"), nullptr);
  EXPECT_NE(find(diagnose(accounted(2.0, 20)), "periodic-evaluation"), nullptr);
}

TEST(PeriodicEvaluation, TheTrainedModelEvaluatedAfterEveryStepIsEvaluation) {
  // pytorch/examples' gcn: the model it trains, scored in eval mode on its train and validation
  // masks after each of its 200 full-batch steps. Not a teacher: the spans call the trained model.
  Evidence ev = accounted(2.0, 200);
  ev.agent->time_account->eval_spans_trained = 200;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  const double total = 1 + 4 + 2.0 + 0.2;
  EXPECT_NEAR(f->run_fraction, 0.9 * 2.0 / total, 1e-9);  // every 10 steps keeps a tenth of it
  EXPECT_NE(f->title.find("after every step"), std::string::npos) << f->title;
  EXPECT_NE(f->fix_code.find("step % 10"), std::string::npos) << f->fix_code;
  // Half of the every-step spans a teacher's, half the trained model's: still the teacher's step.
  ev.agent->time_account->eval_spans_trained = 100;
  EXPECT_EQ(find(diagnose(ev), "periodic-evaluation"), nullptr);
}

// pytorch/examples' super_resolution (3 epochs, this VM, 2026-12-03): test() after each epoch, its
// loader's 4 workers started again at each pass (0.63 s of the evaluation's 6.48 s). The finding
// leaves those starts to worker-restarts; its title's passes times their size is the share it
// prints (it said "29% of the run: 3 passes of 2.2 s", which is 33%), and it says what it left out.
TEST(PeriodicEvaluation, PassesLessTheirWorkerStartsMakeTheShareItPrints) {
  Evidence ev = accounted(6.48, 3, 0, 150);
  ev.agent->time_account->eval_start_s = 0.63;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  const double job_s = ev.agent->time_account->job_s();
  const double own_s = 6.48 - 0.63;
  EXPECT_NE(f->title.find(fmt::format("{:.0f}% of the run: 3 passes of {:.1f} s", 100 * own_s / job_s, own_s / 3)),
            std::string::npos) << f->title;
  EXPECT_NE(f->explanation.find("Not counted here: the 0.6 s its DataLoaders spent starting their worker processes"),
            std::string::npos) << f->explanation;
}

// pytorch/examples' word_language_model, 2 epochs (this VM, 2026-12-01, PyTorch 2.13): evaluate()
// scores the validation set after each epoch (main.py:228) and the test set once after training
// (main.py:282), all through one forward line (main.py:157). That line's time mixes both, and a
// step followed part of it: by it alone, the whole 36.4 s recurred, 2 "passes of 18.2 s" and a
// gain of 18.2 s. The call lines split it: 23.2 s recur, 13.2 s ran once; half as often gives back
// 11.6 s.
TEST(PeriodicEvaluation, ACallAfterTrainingSplitsTheEvaluationItShares) {
  Evidence ev = accounted(36.4, 2, 0, 622);  // 2 spans: the last validation and the test ran back to back
  auto fwd = code_site("eval", "/w/main.py", 157);
  fwd.calls = 1946, fwd.host_ms = 36374.8, fwd.loop_ms = 11594.2, fwd.function = "evaluate";
  auto val = code_site("eval_call", "/w/main.py", 228);
  val.calls = 2, val.host_ms = 23211.0, val.loop_ms = 11594.2;
  auto test = code_site("eval_call", "/w/main.py", 282);
  test.calls = 1, test.host_ms = 13163.9, test.loop_ms = 0;
  ev.agent->sites = {fwd, val, test};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  const TimeAccount& t = *ev.agent->time_account;
  const double recurring_s = 36.4 * 23211.0 / (23211.0 + 13163.9);
  EXPECT_NEAR(f->run_fraction, 0.5 * recurring_s / t.job_s(), 1e-9);
  EXPECT_NE(f->title.find("during training"), std::string::npos) << f->title;  // no size per pass
  EXPECT_EQ(test::ev_value(*f, "eval_s_per_span"), -12345);  // nor in the evidence (41.7 s / 2 printed before)
  EXPECT_NE(f->explanation.find("ran once, after the last training step (main.py:282)"), std::string::npos)
      << f->explanation;
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].line, 228);  // the line to change; the final test's is not one
  for (const auto& s : f->sites) EXPECT_NE(s.line, 282);
}

// Lightning's fit then test and predict (examples/pytorch/basics/backbone_image_classifier.py):
// the evaluation lines that ran only after the last training step run once whatever the schedule.
// They are left out of what evaluating less often gives back, and named as such; recurring lines
// are named costliest first.
TEST(PeriodicEvaluation, LinesRunOnlyAfterTrainingAreNotPeriodic) {
  auto with_lines = [](double val_ms, double val_loop_ms, double test_ms) {
    Evidence ev = accounted(2.0, 3);  // 2.0 s of 7.2 s: 28%
    auto val = code_site("eval", "/w/train.py", 86);
    val.calls = 316, val.host_ms = val_ms, val.loop_ms = val_loop_ms;
    auto test = code_site("eval", "/w/train.py", 92);
    test.calls = 313, test.host_ms = test_ms, test.loop_ms = 0;
    ev.agent->sites = {test, val};
    return ev;
  };
  const double total = 1 + 4 + 2.0 + 0.2;
  // A fifth of the lines' time recurs: 0.4 s of 7.2 s, under the 10% line.
  EXPECT_EQ(find(diagnose(with_lines(400, 200, 1600)), "periodic-evaluation"), nullptr);
  // Three fifths recur: 1.2 s, half of it given back.
  Diagnosis d = diagnose(with_lines(1200, 600, 800));
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->run_fraction, 0.5 * 1.2 / total, 1e-9);
  EXPECT_NE(f->title.find("during training"), std::string::npos) << f->title;
  EXPECT_NE(f->explanation.find("Another 0.8 s ran once, after the last training step (train.py:92)"),
            std::string::npos)
      << f->explanation;
  ASSERT_EQ(f->sites.size(), 1u);  // the recurring line only
  EXPECT_EQ(f->sites[0].line, 86);
  // An agent that did not record loop_ms: every line counts, as before.
  Evidence old = with_lines(1200, -1, 800);
  old.agent->sites[0].loop_ms = -1;
  f = find(d = diagnose(old), "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->run_fraction, 0.5 * 2.0 / total, 1e-9);
  ASSERT_EQ(f->sites.size(), 2u);
  EXPECT_EQ(f->sites[0].line, 86);  // costliest first
}

// pytorch/examples' gat: `train_iter` calls `test(...)` twice after its step, and the script
// once more after the loop. The loop's two call lines are named after the forward's line, with
// their passes and time (first: the lines to change), and do not change the gain (the same time as the forward's line); the
// call after the loop (no training followed) is not a line to change.
TEST(PeriodicEvaluation, NamesTheLoopsLinesThatCallTheEvaluation) {
  Evidence ev = accounted(2.0, 200);
  ev.agent->time_account->eval_spans_trained = 200;
  auto fwd = code_site("eval", "/w/main.py", 280);
  fwd.calls = 401, fwd.host_ms = 2000, fwd.loop_ms = 1990;
  auto train = code_site("eval_call", "/w/main.py", 269);
  train.calls = 200, train.host_ms = 1000, train.loop_ms = 1000, train.function = "train_iter";
  train.code = "loss_train, acc_train = test(model, criterion, input, target, mask_train)";
  auto val = code_site("eval_call", "/w/main.py", 270);
  val.calls = 200, val.host_ms = 990, val.loop_ms = 990, val.function = "train_iter";
  val.code = "loss_val, acc_val = test(model, criterion, input, target, mask_val)";
  auto final_test = code_site("eval_call", "/w/main.py", 377);
  final_test.calls = 1, final_test.host_ms = 10, final_test.loop_ms = 0;
  const double total = 1 + 4 + 2.0 + 0.2;
  ev.agent->sites = {final_test, val, fwd, train};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  // The call lines split the forward's time: the final test's 10 ms of 2,000 ran once, after
  // training (the forward's line alone, which a step followed, counted it as recurring). The
  // forward's time and the calls' are one time, not added.
  EXPECT_NEAR(f->run_fraction, 0.9 * (2.0 * 1990 / 2000) / total, 1e-9);
  ASSERT_EQ(f->sites.size(), 3u);
  EXPECT_EQ(f->sites[0].line, 269);  // the lines to change first, costliest first
  EXPECT_EQ(f->sites[1].line, 270);
  EXPECT_EQ(f->sites[2].line, 280);  // then the evaluation's forward
  EXPECT_NE(f->sites[0].note.find("the loop calls the evaluation here (200 passes, 1.0 s)"), std::string::npos)
      << f->sites[0].note;
  EXPECT_NE(f->sites[0].note.find("every 10 steps"), std::string::npos) << f->sites[0].note;
  // The fix's code is the user's two calls, in the file's order, under the schedule.
  EXPECT_EQ(f->fix_code,
            "if step % 10 == 0:   # evaluate (and log) every 10 steps, not after every one\n"
            "    loss_train, acc_train = test(model, criterion, input, target, mask_train)\n"
            "    loss_val, acc_val = test(model, criterion, input, target, mask_val)");
  // Calls from two functions: the template, not lines of two places side by side.
  ev.agent->sites[1].function = "main";
  f = find(d = diagnose(ev), "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->fix_code.find("evaluate(model)"), std::string::npos) << f->fix_code;
}

// rasbt/LLMs-from-scratch ch05 gpt_train.py (this VM, 2026-12-02, 45 steps): a sample generated
// after every epoch (unguarded, the costliest call) and evaluate_model(...) under
// `if global_step % eval_freq == 0:`, the condition the agent read (guards.py). The fix is written
// on that condition, K doubled, over the line it guards; each line's note says how it runs.
TEST(PeriodicEvaluation, TheFixIsTheUsersOwnConditionWithItsIntervalDoubled) {
  Evidence ev = accounted(2.0, 12, 0, 45);
  auto sample = code_site("eval_call", "/w/gpt_train.py", 105);
  sample.calls = 4, sample.host_ms = 1100, sample.loop_ms = 1100, sample.function = "train_model_simple";
  sample.code = "generate_and_print_sample(";
  auto loss = code_site("eval_call", "/w/gpt_train.py", 96);
  loss.calls = 9, loss.host_ms = 900, loss.loop_ms = 900, loss.function = "train_model_simple";
  loss.code = "train_loss, val_loss = evaluate_model(";
  loss.guard_line = 95, loss.guard = "global_step % eval_freq == 0";
  loss.guard_doubled = "global_step % (2 * eval_freq) == 0";
  ev.agent->sites = {sample, loss};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix_code,
            "if global_step % (2 * eval_freq) == 0:   # was: if global_step % eval_freq == 0: (gpt_train.py:95)\n"
            "    train_loss, val_loss = evaluate_model(");
  ASSERT_GE(f->sites.size(), 2u);
  EXPECT_EQ(f->sites[0].line, 105);
  EXPECT_NE(f->sites[0].note.find("run it half as often"), std::string::npos) << f->sites[0].note;
  EXPECT_NE(f->sites[1].note.find("it runs when `global_step % eval_freq == 0` (line 95): "
                                  "`global_step % (2 * eval_freq) == 0` runs it half as often"),
            std::string::npos)
      << f->sites[1].note;
  // Without the guarded line: the sample runs at every pass of its `for epoch` loop, and the fix
  // counts with the user's variable.
  ev.agent->sites = {sample};
  ev.agent->sites[0].loop_var = "epoch";
  f = find(d = diagnose(ev), "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix_code, "if epoch % 2 == 0:   # evaluate at every other epoch\n    generate_and_print_sample(");
}

// karpathy/llm.c's train_gpt2.py (this VM, 2026-12-02, d12 on the CPU, --val_loss_every 10
// --sample_every 20, 30 steps): the validation loss is written inline in the loop (its forward's
// line, 758, is the loop's own: the agent's eval_call there too) under a condition written over
// three lines (the agent reads it as one), and a sample is generated at 779 under another. The
// inline line, the costliest, is named as the loop evaluating there; the condition is too long to
// share a line with its old self, so the old one is a comment above it.
TEST(PeriodicEvaluation, AnEvaluationInlineInTheLoopIsWhereTheLoopEvaluates) {
  Evidence ev = accounted(2.0, 4, 0, 30);
  auto fwd = code_site("eval", "/w/train_gpt2.py", 758);
  fwd.calls = 80, fwd.host_ms = 23300, fwd.loop_ms = 17900;
  fwd.code = "_, loss = model(x, y, return_logits=False)";
  auto val = code_site("eval_call", "/w/train_gpt2.py", 758);
  val.calls = 3, val.host_ms = 18700, val.loop_ms = 17900;
  val.code = fwd.code;
  val.guard_line = 748;
  val.guard = "(args.val_loss_every > 0 and (step % args.val_loss_every == 0 or last_step)) and val_loader is not None";
  val.guard_doubled =
      "(args.val_loss_every > 0 and (step % (2 * args.val_loss_every) == 0 or last_step)) and val_loader is not None";
  auto sample = code_site("eval_call", "/w/train_gpt2.py", 779);
  sample.calls = 2, sample.host_ms = 3000, sample.loop_ms = 1500;
  sample.code = "yg = raw_model.generate(xg, max_new_tokens, temperature=temperature, top_k=top_k)";
  ev.agent->sites = {sample, fwd, val};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  ASSERT_GE(f->sites.size(), 2u);
  EXPECT_EQ(f->sites[0].line, 758);
  EXPECT_NE(f->sites[0].note.find("the loop evaluates here (3 passes, 18.7 s)"), std::string::npos) << f->sites[0].note;
  EXPECT_EQ(f->sites[1].line, 779);
  EXPECT_NE(f->sites[1].note.find("the loop calls the evaluation here (2 passes, 3.0 s)"), std::string::npos)
      << f->sites[1].note;
  for (size_t i = 2; i < f->sites.size(); ++i) EXPECT_NE(f->sites[i].line, 758) << "named once";
  EXPECT_EQ(f->fix_code,
            "# was: if (args.val_loss_every > 0 and (step % args.val_loss_every == 0 or last_step)) and val_loader is "
            "not None: (train_gpt2.py:748)\n"
            "if (args.val_loss_every > 0 and (step % (2 * args.val_loss_every) == 0 or last_step)) and val_loader is "
            "not None:\n"
            "    _, loss = model(x, y, return_logits=False)");
  // Its first pass ran before the first training step (step 0): doubling the interval leaves it,
  // so half of the other three passes is what evaluating half as often gives back (measured there:
  // 1.11x where half of all four predicted 1.2x; half the batches, 1.21x, is said beside it).
  const double job = 1 + 30 * 0.02 + 2.0 + 0.2;
  EXPECT_NEAR(f->run_fraction, 0.5 * 2.0 / job, 1e-9);
  ev.agent->time_account->eval_pre_s = 0.5;
  f = find(d = diagnose(ev), "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->run_fraction, 0.5 * (2.0 - 0.5) / job, 1e-9);
  EXPECT_NE(f->gain.find("evaluating half as often gives back 0.8 s of the 3.8 s run (the 0.5 s before the first "
                         "training step runs whatever the interval; on half the batches, 1.0 s)"),
            std::string::npos)
      << f->gain;
}

// karpathy/minGPT's projects/adder (this VM, 2026-11-30, 1,100 iterations): mingpt/trainer.py's
// loop calls the script's on_batch_end callback after every step, and the callback evaluates every
// 500 iterations with two eval_split(...) calls. The script's two lines are where it chose to
// evaluate: they come first and make the fix's code; the loop's line is named for what it is.
TEST(PeriodicEvaluation, AScriptsCallbackThatEvaluatesIsNamedBeforeTheLoopThatCallsIt) {
  Evidence ev = accounted(3.4, 3, 0, 1100);
  auto fwd = code_site("eval", "/w/mingpt/model.py", 293);
  fwd.calls = 900, fwd.host_ms = 3400, fwd.loop_ms = 3400;
  auto loop = code_site("eval_call", "/w/mingpt/trainer.py", 101);
  loop.calls = 3, loop.host_ms = 3400, loop.loop_ms = 3400, loop.function = "run";
  loop.code = "self.trigger_callbacks('on_batch_end')";
  auto train = code_site("eval_hook", "/w/projects/adder/adder.py", 192);
  train.calls = 3, train.host_ms = 3200, train.loop_ms = 3200, train.function = "batch_end_callback";
  train.code = "train_score = eval_split(trainer, 'train', max_batches=train_max_batches)";
  auto test = code_site("eval_hook", "/w/projects/adder/adder.py", 193);
  test.calls = 3, test.host_ms = 200, test.loop_ms = 200, test.function = "batch_end_callback";
  test.code = "test_score  = eval_split(trainer, 'test',  max_batches=None)";
  ev.agent->sites = {loop, test, fwd, train};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  const double total = 1 + 1100 * 0.02 + 3.4 + 0.2;
  EXPECT_NEAR(f->run_fraction, 0.5 * 3.4 / total, 1e-9);  // the lines do not change the gain
  ASSERT_EQ(f->sites.size(), 4u);
  EXPECT_EQ(f->sites[0].line, 192);  // the script's lines, costliest first
  EXPECT_EQ(f->sites[1].line, 193);
  EXPECT_EQ(f->sites[2].line, 101);  // then the loop's
  EXPECT_EQ(f->sites[3].line, 293);  // then the evaluation's forward
  EXPECT_NE(f->sites[0].note.find("your script starts the evaluation here (3 passes, 3.2 s), called back from the "
                                  "loop at " + loop.path + ":101: run it half as often"),
            std::string::npos)
      << f->sites[0].note;
  EXPECT_NE(f->sites[2].note.find("calls back into your script after every step"), std::string::npos)
      << f->sites[2].note;
  EXPECT_EQ(f->fix_code,
            "if step % (2 * eval_interval) == 0:   # or: fewer eval batches\n"
            "    train_score = eval_split(trainer, 'train', max_batches=train_max_batches)\n"
            "    test_score  = eval_split(trainer, 'test',  max_batches=None)");
  // A callback that calls the model itself: its forward's line is the script's line, named once.
  auto inline_fwd = code_site("eval", "/w/projects/adder/adder.py", 150);
  inline_fwd.calls = 900, inline_fwd.host_ms = 3400, inline_fwd.loop_ms = 3400;
  auto inline_hook = code_site("eval_hook", "/w/projects/adder/adder.py", 150);
  inline_hook.calls = 3, inline_hook.host_ms = 3400, inline_hook.loop_ms = 3400, inline_hook.function = "cb";
  inline_hook.code = "out = model(x)";
  ev.agent->sites = {loop, inline_fwd, inline_hook};
  f = find(d = diagnose(ev), "periodic-evaluation");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->sites.size(), 2u);
  EXPECT_EQ(f->sites[0].line, 150);
  EXPECT_NE(f->sites[0].note.find("your script starts the evaluation here"), std::string::npos) << f->sites[0].note;
  EXPECT_EQ(f->sites[1].line, 101);
}

TEST(PeriodicEvaluation, SilentWithoutAnAccount) {
  Evidence ev = accounted(1.3, 5);
  ev.agent->time_account.reset();
  EXPECT_EQ(find(diagnose(ev), "periodic-evaluation"), nullptr);
}

TEST(CompileCost, FiresWhenTheStepsCannotWinItBack) {
  // 3 s of compilation against 0.4 s of steps (20 steps): 0.43 x 0.4 = 0.17 s < 3 s.
  Diagnosis d = diagnose(accounted(0, 0, 3.0, 20));
  const Finding* f = find(d, "compile-cost");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->outside_step);
  EXPECT_NEAR(f->run_fraction, 3.0 / (1 + 0.4 + 3.0 + 0.2), 1e-9);
  // 500 steps (10 s): 0.43 x 10 = 4.3 s > 3 s: it pays for itself.
  EXPECT_EQ(find(diagnose(accounted(0, 0, 3.0, 500)), "compile-cost"), nullptr);
  // A small share of the run is never a finding, whatever the steps: 0.3 s of a 5.9 s run (a long
  // start-up), though more than 0.43 x the steps' 0.4 s.
  Evidence small = accounted(0, 0, 0.3, 20);
  small.agent->time_account->before_first_step_s += 4;
  small.agent->time_account->total_s += 4;
  EXPECT_EQ(find(diagnose(small), "compile-cost"), nullptr);
}

TEST(SlowStart, TheUsersStartUpCodeNotTheImports) {
  // 9 s before the first step of a 14.2 s run; the profile: 2 s of imports, 6 s in one user line.
  Evidence ev = accounted(0, 0);
  auto& t = *ev.agent->time_account;
  t.before_first_step_s = 9;
  t.total_s += 8;
  t.startup_samples = 800;
  t.startup_import_s = 2;
  CodeSite s = code_site("startup", "/p/data.py", 14);
  s.host_ms = 6000;
  ev.agent->sites.push_back(s);
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "slow-start");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->run_fraction, 6.0 / t.total_s, 1e-9);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].line, 14);
  // The same start-up spent loading libraries: nothing of the user's to cache.
  t.startup_import_s = 8;
  EXPECT_EQ(find(diagnose(ev), "slow-start"), nullptr);
  // Not profiled (an older agent): silent.
  t.startup_import_s = -1;
  EXPECT_EQ(find(diagnose(ev), "slow-start"), nullptr);
}

TEST(RunScale, StepFindingsAreScaledByTheStepsShareAndRankWithTheRunFindings) {
  Evidence ev = accounted(3.0, 5);  // evaluation 3 s of 8.2 s: the fix gives back 1.5 s (18%)
  ev.agent->io_pct = 10;            // in-loop-io: 10% of the step
  ev.agent->io_ms = 2;
  Diagnosis d = diagnose(ev);
  const Finding* io = find(d, "in-loop-io");
  const Finding* evl = find(d, "periodic-evaluation");
  ASSERT_NE(io, nullptr);
  ASSERT_NE(evl, nullptr);
  const auto& t = *ev.agent->time_account;
  EXPECT_NEAR(io->run_fraction, io->recoverable_fraction * (t.train_steps_s + t.data_wait_s) / t.total_s, 1e-9);
  EXPECT_FALSE(io->outside_step);
  // 0.1 x 4/8.2 = 4.9% of the run against 18%: evaluation first.
  EXPECT_EQ(d.findings.front().id, "periodic-evaluation");
}

// worker-restarts on a 7.2 s run of 3 epochs (the fixture's 200 steps, 4 s): the loader at
// /p/train.py:30 started its workers 3 times, 2 of them again for the same loader, and the loop
// waited 0.9 s in each; the start waits are data wait outside the steady steps.
Evidence restarted(int64_t restarts, int64_t rebuilds, double each_s = 0.9) {
  Evidence ev = accounted(0, 0);
  auto& t = *ev.agent->time_account;
  const int64_t starts = 1 + restarts + rebuilds;
  t.data_start_s = each_s * static_cast<double>(starts);
  t.data_starts = starts;
  t.data_wait_s = t.data_start_s;
  t.total_s += t.data_wait_s;
  CodeSite s = code_site("dataloader", "/p/train.py", 30);
  s.starts = starts;
  s.start_ms = 1e3 * t.data_start_s;
  s.restarts = restarts;
  s.restart_ms = 1e3 * each_s * static_cast<double>(restarts);
  s.rebuilds = rebuilds;
  s.rebuild_ms = 1e3 * each_s * static_cast<double>(rebuilds);
  ev.agent->sites.push_back(s);
  AgentEvidence::Loader l;
  l.batch_size = 32;
  l.num_workers = 2;
  l.site_file = "/p/train.py";
  l.site_line = 30;
  ev.agent->loaders.push_back(l);
  return ev;
}

TEST(WorkerRestarts, TheWaitsAfterTheFirstLessABatchPerPassOnTheRunsScale) {
  Evidence ev = restarted(2, 0);
  ev.agent->sample_getitem_ms = 1;  // persistent workers still load each pass's first batch: 32 + 2 ms
  ev.agent->collate_ms = 2;
  const double run_s = ev.agent->time_account->job_s();
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->outside_step);
  EXPECT_NEAR(f->run_fraction, 2 * (0.9 - 0.034) / run_s, 1e-9);
  ASSERT_EQ(f->fix_settings.size(), 1u);
  EXPECT_EQ(f->fix_settings[0].first, "dataloader.persistent_workers");
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].line, 30);
  EXPECT_NE(f->sites[0].note.find("persistent_workers=True"), std::string::npos) << f->sites[0].note;
  // The first start is not a restart: one pass alone is no finding, however long its start.
  EXPECT_EQ(find(diagnose(restarted(0, 0, 3.0)), "worker-restarts"), nullptr);
  // 2 x 0.05 s of a 5.3 s run: 1.9%, under the 5% bar.
  EXPECT_EQ(find(diagnose(restarted(2, 0, 0.05)), "worker-restarts"), nullptr);
}

// The start method the agent recorded decides what the text says of a start: 'spawn', a new
// interpreter each (named as this run's); 'fork', nothing of the kind; unrecorded (an older agent),
// the general remark.
TEST(WorkerRestarts, WhatAStartCostsFollowsTheRecordedStartMethod) {
  Evidence ev = restarted(2, 0);
  ev.agent->loaders[0].start_method = "spawn";
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->explanation.find("Here they start by 'spawn'"), std::string::npos) << f->explanation;
  ev.agent->loaders[0].start_method = "fork";
  d = diagnose(ev);
  f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->explanation.find("spawn"), std::string::npos) << f->explanation;
  ev.agent->loaders[0].start_method = "";
  d = diagnose(ev);
  f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->explanation.find("Under the 'spawn' start method"), std::string::npos) << f->explanation;
}

TEST(WorkerRestarts, ALoaderBuiltEveryEpochOrAnIteratorEveryStepIsACodeChange) {
  Diagnosis d = diagnose(restarted(0, 2));
  const Finding* f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->fix_settings.empty());  // persistent_workers on a loader built anew changes nothing
  EXPECT_NE(f->fix.find("Build the DataLoader once"), std::string::npos) << f->fix;
  // A start in most steps: next(iter(loader)).
  Evidence ev = restarted(150, 0, 0.1);
  f = find(d = diagnose(ev), "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->fix_settings.empty());
  EXPECT_NE(f->fix.find("iterator once, outside the loop"), std::string::npos) << f->fix;
}

TEST(WorkerRestarts, UnderHuggingFaceTheKnobAtTrainingArguments) {
  // The Trainer iterates its training loader again each epoch and builds an evaluation loader at
  // each evaluation; its dataloader_persistent_workers keeps the first and caches the second.
  Evidence ev = restarted(3, 3, 0.15);
  CodeSite hf = code_site("config", "/p/train.py", 12);
  hf.detail = "transformers.TrainingArguments";
  ev.agent->sites.push_back(hf);
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "worker-restarts");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->fix.find("dataloader_persistent_workers=True"), std::string::npos) << f->fix;
  EXPECT_TRUE(f->fix_settings.empty());  // --set keeps a loader's workers, never a loader the Trainer builds again
  ASSERT_GE(f->sites.size(), 2u);
  EXPECT_EQ(f->sites[0].line, 12);
  EXPECT_EQ(f->sites[1].note.find("here"), std::string::npos) << f->sites[1].note;  // trainer.train() is not where
}

TEST(RunScale, TheWaitsForWorkersToStartAreNotTheSteadySteps) {
  // in-loop-io, 10% of the steady step: on the run's scale, of the training steps and the steady
  // data wait only; the 2.7 s of waits for starting workers are the run's (worker-restarts).
  Evidence ev = restarted(2, 0);
  ev.agent->io_pct = 10;
  ev.agent->io_ms = 2;
  Diagnosis d = diagnose(ev);
  const Finding* io = find(d, "in-loop-io");
  ASSERT_NE(io, nullptr);
  const auto& t = *ev.agent->time_account;
  EXPECT_NEAR(io->run_fraction, io->recoverable_fraction * t.train_steps_s / t.total_s, 1e-9);
}

}  // namespace
}  // namespace ts::diagnose
