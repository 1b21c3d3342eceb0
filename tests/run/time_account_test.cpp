// run.time_account from the agent's phases record (run/time_account.cpp): the three regions
// (before the first step, the loop, after the last step) less what phases.py counted in each,
// every second in one bucket.
#include <gtest/gtest.h>

#include <string>

#include "run/time_account.h"

namespace ts::run {
namespace {

constexpr double kLaunch = 1000.0;  // s, steady clock
constexpr int64_t kS = 1'000'000'000;

// One process: launched at 1000 s, first step at 1003 s, last step's end at 1013 s, exit at
// 1015 s. In the loop: 2 s of evaluation (0.2 s of its fetches), 0.5 s of compilation, 0.3 s of
// checkpoints, 1.2 s of fetch waits in the steps (0.2 s of them the evaluation's). Before the
// first step: 0.4 s of compilation (a warm-up call). After the last step: a final evaluation of
// 0.6 s and a checkpoint of 0.1 s.
Records records(bool with_phases = true) {
  Records r;
  if (with_phases) {
    TextRecord t;
    t.pid = 7;
    t.kind = "phases";
    auto ns = [](double s) { return std::to_string(static_cast<int64_t>(s * kS)); };
    t.kv = {{"first_step_t", ns(1003)}, {"last_step_end_t", ns(1013)}, {"t", ns(1014.9)}, {"final", "1"},
            {"eval_spans", "5"}, {"eval_calls", "80"}, {"io_n", "3"}, {"compile_frames", "2"},
            {"eval_ns", ns(2.6)}, {"pre_eval_ns", "0"}, {"end_eval_ns", ns(2.0)},
            {"compile_ns", ns(0.9)}, {"pre_compile_ns", ns(0.4)}, {"end_compile_ns", ns(0.9)},
            {"io_ns", ns(0.4)}, {"pre_io_ns", "0"}, {"end_io_ns", ns(0.3)},
            {"eval_fetch_ns", ns(0.25)}, {"pre_eval_fetch_ns", "0"}, {"end_eval_fetch_ns", ns(0.2)}};
    r.texts.push_back(t);
  }
  StepTotals st;
  st.count = 100;
  st.dur_ns = 10 * kS;
  st.data_wait_ns = static_cast<int64_t>(1.2 * kS);
  r.step_totals[{7, static_cast<int>(StepSource::Optimizer)}] = st;
  return r;
}

TEST(TimeAccount, EveryBucketFromItsRegion) {
  auto a = time_account(records(), 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(a->total_s, 15.0);
  EXPECT_NEAR(a->before_first_step_s, 3.0 - 0.4, 1e-6);           // start-up less the warm-up compilation
  EXPECT_NEAR(a->compile_s, 0.9, 1e-6);                            // wherever it happened
  EXPECT_NEAR(a->eval_s, 2.6, 1e-6);                               // the loop's and the final one
  EXPECT_NEAR(a->checkpoint_s, 0.4, 1e-6);
  EXPECT_NEAR(a->data_wait_s, 1.2 - 0.2, 1e-6);                    // less the evaluation's fetches
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0, 1e-6);  // the loop less what was in it
  EXPECT_NEAR(a->other_s, 2.0 - 0.6 - 0.1, 1e-6);                  // after the last step
  EXPECT_NEAR(a->exit_s, 15.0 - 14.9, 1e-6);                       // of it: from the final record to the exit
  const double sum = a->before_first_step_s + a->compile_s + a->train_steps_s + a->eval_s + a->checkpoint_s +
                     a->data_wait_s + a->other_s;
  EXPECT_NEAR(sum, a->total_s, 1e-9);
  EXPECT_NEAR(a->goodput_pct, 100 * 6.2 / 15.0, 1e-6);
  EXPECT_EQ(a->steps, 100);
  EXPECT_EQ(a->eval_spans, 5);
  EXPECT_EQ(a->compile_frames, 2);
  EXPECT_EQ(a->checkpoints, 3);
  EXPECT_DOUBLE_EQ(a->steady_step_s, 0.02);
}

// The loop's own loading (num_workers=0) queued for a core: the steps' data wait leaves it out
// (the DataLoader model must not size workers for a missing core), and so did the account, which
// then read 0.2-0.3 s against the script's own 0.5-0.8 s of next() under ctest -j2 (corpus
// distill_teacher). The account counts the loop's whole wait and says how much was queued: 0.4 s
// in the loop (0.1 s before the first step is start-up's; 0.05 s after the last is other's).
TEST(TimeAccount, TheLoopsWaitCountsItsQueuedLoading) {
  Records r = records();
  auto ns = [](double s) { return std::to_string(static_cast<int64_t>(s * kS)); };
  r.texts[0].kv["queued_ns"] = ns(0.55);
  r.texts[0].kv["pre_queued_ns"] = ns(0.1);
  r.texts[0].kv["end_queued_ns"] = ns(0.5);
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->data_queued_s, 0.4, 1e-6);
  EXPECT_NEAR(a->data_wait_s, 1.2 - 0.2 + 0.4, 1e-6);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.4, 1e-6);
  EXPECT_NEAR(a->before_first_step_s, 3.0 - 0.4, 1e-6);  // its queued loading is start-up's wall already
  const double sum = a->before_first_step_s + a->compile_s + a->train_steps_s + a->eval_s + a->checkpoint_s +
                     a->data_wait_s + a->other_s;
  EXPECT_NEAR(sum, a->total_s, 1e-9);
  // An agent without the total (older): nothing queued.
  auto b = time_account(records(), 7, kLaunch, 15.0, 20.0);
  EXPECT_EQ(b->data_queued_s, 0);
}

// A job killed by a signal (SIGTERM from a scheduler's time limit) sends no final record: the
// latest one is from a step long before (the agent sends at steps 16, 64, 256 and every 1024th).
// pytorch/examples siamese_network, killed at step 759 of 784 ms steps, was accounted 201 s of
// training steps and 391 s of "other": the loop ends at the last step record's end instead.
TEST(TimeAccount, AKilledJobsLoopEndsAtItsLastStepRecord) {
  Records r = records();
  r.texts[0].kv["final"] = "0";
  r.texts[0].kv["last_step_end_t"] = std::to_string(1006 * kS);  // sent at an early step
  r.texts[0].kv["t"] = std::to_string(1006 * kS);
  for (auto k : {"eval_ns", "compile_ns", "io_ns", "eval_fetch_ns"}) r.texts[0].kv[k] = r.texts[0].kv[std::string("end_") + k];
  r.step_totals.begin()->second.last_end_ns = 1013 * kS;  // the steps went on to 1013 s
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0, 1e-6);  // the whole loop, as if final
  EXPECT_NEAR(a->other_s, 2.0, 1e-6);  // what the records cannot split after the last step
  EXPECT_DOUBLE_EQ(a->exit_s, 0);      // no record at exit: its start is not known
  // A final record is believed as it is: a step record past it (none in practice) moves nothing.
  r.texts[0].kv["final"] = "1";
  a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_GT(a->other_s, 8.0);  // 1006-1015 s is after the last step the record names
}

TEST(TimeAccount, NothingWithoutThePhasesRecordOrForAnotherProcess) {
  EXPECT_FALSE(time_account(records(false), 7, kLaunch, 15.0, 20.0));
  EXPECT_FALSE(time_account(records(), 8, kLaunch, 15.0, 20.0));
}

TEST(TimeAccount, AnInferenceLoopHasNoEvaluationBesideItsSteps) {
  // Steps counted by the forward (no backward, no optimizer): its eval-mode calls are the steps.
  Records r = records();
  StepTotals st = r.step_totals.begin()->second;
  r.step_totals.clear();
  r.step_totals[{7, static_cast<int>(StepSource::Forward)}] = st;
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->eval_s, 0);
  EXPECT_EQ(a->eval_spans, 0);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 0.5 - 0.3 - 1.2, 1e-6);
}

// mnist_hogwild's shape: the trainers end one after another, and then the parent (which never
// trained) tests the model. After the training process's last step, another trainer's steps are
// training and the parent's are evaluation, not "other"; inference inside the training process's
// loop is not counted again.
TEST(TimeAccount, OtherProcessesStepsAfterTheLastStepAreTrainingOrEvaluation) {
  Records r = records();
  auto phases = [&](pid_t pid, double first, double last, int level) {
    TextRecord t;
    t.pid = pid;
    t.kind = "phases";
    t.kv = {{"first_step_t", std::to_string(static_cast<int64_t>(first * kS))},
            {"last_step_end_t", std::to_string(static_cast<int64_t>(last * kS))}, {"final", "1"}};
    r.texts.push_back(t);
    r.step_totals[{pid, level}] = StepTotals{};
  };
  phases(9, 1013.5, 1014.5, static_cast<int>(StepSource::Fetch));     // the parent's test pass
  phases(10, 1013.8, 1014.3, static_cast<int>(StepSource::Forward));  // overlapping it: counted once
  phases(12, 1005.0, 1008.0, static_cast<int>(StepSource::Forward));  // inside the loop: not this
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->eval_s, 2.6 + 1.0, 1e-6);
  EXPECT_NEAR(a->other_s, 2.0 - 0.6 - 0.1 - 1.0, 1e-6);
  EXPECT_EQ(a->eval_spans, 5 + 2);
  // The other trainer, from before the training process's last step to 1013.2 (and into the
  // parent's span when it ends later: that time is the trainer's, not evaluation).
  phases(11, 1009.0, 1013.2, static_cast<int>(StepSource::Optimizer));
  a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0 + 0.2, 1e-6);
  EXPECT_NEAR(a->eval_s, 2.6 + 1.0, 1e-6);
  EXPECT_NEAR(a->other_s, 2.0 - 0.6 - 0.1 - 1.0 - 0.2, 1e-6);
  r.texts.back().kv["last_step_end_t"] = std::to_string(static_cast<int64_t>(1013.7 * kS));
  a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0 + 0.7, 1e-6);
  // The parent's 1.0 s less 0.2 s under the trainer, 0.8 s, of which the region's 2.0 s leaves 0.6:
  // the training process's own final evaluation and checkpoint (0.7 s) are in it too.
  EXPECT_NEAR(a->eval_s, 2.6 + 0.6, 1e-6);
  EXPECT_NEAR(a->other_s, 0, 1e-6);
  const double sum = a->before_first_step_s + a->compile_s + a->train_steps_s + a->eval_s + a->checkpoint_s +
                     a->data_wait_s + a->other_s;
  EXPECT_NEAR(sum, a->total_s, 1e-9);
}

// The same before the training process's first step: a trainer that started earlier was training
// (which of two hogwild trainers is "the training process" must not move time between buckets).
TEST(TimeAccount, AnotherTrainersStepsBeforeTheFirstStepAreTraining) {
  Records r = records();
  TextRecord t;
  t.pid = 13;
  t.kind = "phases";
  t.kv = {{"first_step_t", std::to_string(1001 * kS)}, {"last_step_end_t", std::to_string(1012 * kS)}, {"final", "1"}};
  r.texts.push_back(t);
  r.step_totals[{13, static_cast<int>(StepSource::Optimizer)}] = StepTotals{};
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->before_first_step_s, 3.0 - 0.4 - 2.0, 1e-6);  // 1001-1003 was the other trainer's
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0 + 2.0, 1e-6);
  EXPECT_NEAR(a->other_s, 2.0 - 0.6 - 0.1, 1e-6);  // it ended before the training process did
  EXPECT_EQ(a->eval_spans, 5);
}

TEST(TimeAccount, OurProfilerWindowIsNeitherTheStepsNorTheJob) {
  // trainscope's window took 1.5 s between two steps of the loop (start, stop, export) and 0.2 s
  // at exit (a window still open when the script ended).
  Records r = records();
  auto ns = [](double s) { return std::to_string(static_cast<int64_t>(s * kS)); };
  r.texts[0].kv["profiler_ns"] = ns(1.7);
  r.texts[0].kv["pre_profiler_ns"] = "0";
  r.texts[0].kv["end_profiler_ns"] = ns(1.5);
  auto a = time_account(r, 7, kLaunch, 15.0, 20.0);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->profiler_s, 1.7, 1e-6);
  EXPECT_NEAR(a->train_steps_s, 10.0 - 2.0 - 0.5 - 0.3 - 1.0 - 1.5, 1e-6);
  EXPECT_NEAR(a->other_s, 2.0 - 0.6 - 0.1 - 0.2, 1e-6);
  const double sum = a->before_first_step_s + a->compile_s + a->train_steps_s + a->eval_s + a->checkpoint_s +
                     a->data_wait_s + a->profiler_s + a->other_s;
  EXPECT_NEAR(sum, 15.0, 1e-9);
  // Goodput of the run as it would be without us: 4.7 s of steps in 15 - 1.7 s.
  EXPECT_NEAR(a->job_s(), 13.3, 1e-6);
  EXPECT_NEAR(a->goodput_pct, 100 * 4.7 / 13.3, 1e-6);
}

TEST(TimeAccount, NeverMoreThanTheWallTime) {
  // The process outlived what trainscope timed (a clock edge): the buckets still add up.
  auto a = time_account(records(), 7, kLaunch, 12.0, 20.0);
  ASSERT_TRUE(a);
  const double sum = a->before_first_step_s + a->compile_s + a->train_steps_s + a->eval_s + a->checkpoint_s +
                     a->data_wait_s + a->other_s;
  EXPECT_NEAR(sum, 12.0, 1e-9);
  for (double b : {a->before_first_step_s, a->compile_s, a->train_steps_s, a->eval_s, a->checkpoint_s, a->data_wait_s,
                   a->other_s})
    EXPECT_GE(b, 0);
}

}  // namespace
}  // namespace ts::run
