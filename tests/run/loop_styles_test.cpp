// The training loops people write (tests/run/scripts/loops), each run unchanged under
// `trainscope run` with Debian's PyTorch 1.13 on CPU and checked for: the step count against the
// script's own counter (it prints "COUNT n" however it ends), the marker that found the loop
// (run.agent.step_source), `--steps` stopping it after exactly that many of the script's own
// iterations, the exit status passed through, and no error from the agent.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <regex>

#include "run_test_util.h"

namespace ts::run::test {
namespace {

struct Loop {
  CliResult cli;
  std::string report;          // report.json text
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  int64_t count = -1;          // the script's own counter
  std::string_view str(const char* a, const char* b, const char* c = nullptr) {
    auto e = c ? doc[a][b][c] : doc[a][b];
    std::string_view v;
    return e.get(v) == simdjson::SUCCESS ? v : std::string_view();
  }
  int64_t num(const char* a, const char* b, const char* c = nullptr) {
    auto e = c ? doc[a][b][c] : doc[a][b];
    int64_t v = -1;
    return e.get(v) == simdjson::SUCCESS ? v : -1;
  }
  double real(const char* a, const char* b, const char* c, const char* d) {
    double v = -1;
    return doc[a][b][c][d].get(v) == simdjson::SUCCESS ? v : -1;
  }
};

std::unique_ptr<Loop> run_loop(const std::string& name, const std::vector<std::string>& args, int64_t steps = 0) {
  auto l = std::make_unique<Loop>();
  std::string out = fresh_dir("loops-" + name + (steps ? "-steps" : ""));
  std::vector<std::string> a = {"-q", "run", "--no-store", "--no-profile", "--out", out};
  if (steps) a.insert(a.end(), {"--steps", std::to_string(steps)});
  a.push_back("--");
  a.push_back(torch_python());
  a.push_back(scripts_dir() + "/loops/" + name + ".py");
  a.insert(a.end(), args.begin(), args.end());
  l->cli = run_cli(a);
  l->report = slurp(out + "/report.json");
  if (l->parser.parse(l->report).get(l->doc) != simdjson::SUCCESS) ADD_FAILURE() << name << ": no report.json";
  std::smatch m;
  static const std::regex count_re("COUNT (\\d+)");
  if (std::regex_search(l->cli.out, m, count_re)) l->count = std::stoll(m[1]);
  return l;
}

// What every loop must show: the report's steps equal the script's count (less `fewer` where the
// loop shape makes the agent merge steps, explained at the call), no agent error.
void expect_clean(Loop& l, const char* name, int64_t fewer = 0) {
  EXPECT_EQ(l.cli.err.find("trainscope agent: internal error"), std::string::npos) << name << ": " << l.cli.err;
  simdjson::dom::array errs;
  ASSERT_EQ(l.doc["run"]["agent"]["errors"].get(errs), simdjson::SUCCESS) << name;
  EXPECT_EQ(errs.size(), 0u) << name << ": " << l.report;
  ASSERT_GT(l.count, 0) << name << " printed no COUNT: " << l.cli.out << l.cli.err;
  EXPECT_EQ(l.num("run", "agent", "steps"), l.count - fewer) << name;
}

// --steps 5: the script's own counter reads 5 (the agent stops at the start of the 6th iteration),
// the report has 5 steps, the status is 0.
void expect_steps_stop(const std::string& name, const std::vector<std::string>& args, int64_t n = 5) {
  auto l = run_loop(name, args, n);
  EXPECT_EQ(l->cli.status, 0) << name << ": " << l->cli.err;
  EXPECT_EQ(l->count, n) << name << " --steps " << n << ": " << l->cli.out;
  EXPECT_EQ(l->num("run", "agent", "steps"), n) << name;
  EXPECT_EQ(l->str("run", "stopped_by"), "steps") << name;
  EXPECT_EQ(l->cli.err.find("trainscope agent: internal error"), std::string::npos) << name << ": " << l->cli.err;
}

// Per step: forward, backward and optimizer are disjoint parts of the step, so their sum never
// exceeds it (it did when step(closure)'s forward/backward were counted twice).
void expect_parts_within_step(Loop& l, const char* name) {
  simdjson::dom::array rows;
  ASSERT_EQ(l.doc["run"]["agent"]["step_table"]["rows"].get(rows), simdjson::SUCCESS);
  ASSERT_GT(rows.size(), 0u);
  for (auto row : rows) {
    // columns: step, flags, dur_ms, data_wait_ms, h2d_ms, h2d_count, h2d_bytes, forward_ms, backward_ms, optimizer_ms
    double dur = row.at(2), fwd = row.at(7), bwd = row.at(8), opt = row.at(9);
    EXPECT_LE(fwd + bwd + opt, dur + 0.05) << name << " step " << int64_t(row.at(0));
    EXPECT_GE(opt, 0.0) << name;
  }
}

TEST(LoopStyles, ManualSgdWithoutOptimizer) {
  REQUIRE_TORCH();
  auto l = run_loop("manual_sgd", {"60"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "manual_sgd");
  EXPECT_EQ(l->str("run", "agent", "step_source"), "backward");
  expect_steps_stop("manual_sgd", {"60"});
}

// A library that probes for torch (importlib.util.find_spec, as datasets and transformers do)
// before the script imports it: every step still counted (none were, in HF's run_clm.py).
TEST(LoopStyles, ATorchProbeBeforeItsImportLosesNoStep) {
  REQUIRE_TORCH();
  auto l = run_loop("probed_first", {"30"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "probed_first");
  EXPECT_EQ(l->count, 30);
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
}

// An RL loop (episodes.py, REINFORCE's shape): 12 policy forwards with autograd per optimizer
// step, the optimizer built before the loop. Until the first optimizer step the forwards count the
// steps provisionally, one each; the FLOPs count must wait for the optimizer's steps, or it
// measures one forward (4,608 FLOPs) for a step of twelve.
TEST(LoopStyles, PolicyEpisodesCountTheirForwardsPerStep) {
  REQUIRE_TORCH();
  auto l = run_loop("episodes", {"30", "12"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "episodes");
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  // Linear(4, 128) and Linear(128, 2) on one observation: 768 multiply-accumulates a forward, x2
  // FLOPs, x3 with its backward, twelve forwards a step.
  double flops = -1;
  EXPECT_EQ(l->doc["host"]["model_flops_per_step"].get(flops), simdjson::SUCCESS) << l->report;
  EXPECT_EQ(flops, 12.0 * 3 * 2 * (4 * 128 + 128 * 2));
}

TEST(LoopStyles, PreBatchedTensorsWordLanguageModel) {
  REQUIRE_TORCH();
  auto l = run_loop("word_lm", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "word_lm");
  EXPECT_EQ(l->count, 40);  // 800 rows of batchified tokens, bptt 20: range(0, 799, 20)
  EXPECT_EQ(l->str("run", "agent", "step_source"), "backward");
  expect_steps_stop("word_lm", {});
}

TEST(LoopStyles, InferenceOverPreBatchedTensors) {
  REQUIRE_TORCH();
  auto l = run_loop("inference", {"30"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "inference");
  EXPECT_EQ(l->str("run", "agent", "step_source"), "forward");
  expect_steps_stop("inference", {"30"});
}

TEST(LoopStyles, LbfgsClosure) {
  REQUIRE_TORCH();
  auto l = run_loop("lbfgs", {"8"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "lbfgs");
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  EXPECT_GT(l->real("run", "agent", "summary", "forward_ms"), 0.0);   // only inside step(closure)
  EXPECT_GT(l->real("run", "agent", "summary", "backward_ms"), 0.0);
  expect_parts_within_step(*l, "lbfgs");
  expect_steps_stop("lbfgs", {"8"}, 3);
}

TEST(LoopStyles, GanWithTwoOptimizers) {
  REQUIRE_TORCH();
  auto l = run_loop("gan", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "gan");
  EXPECT_EQ(l->count, 30);  // 480 samples / batch 16
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  // Two optimizer steps per iteration; 3 backward over them is not gradient accumulation.
  double opts = -1, bpo = -1;
  ASSERT_EQ(l->doc["run"]["agent"]["optimizer_steps_per_step"].get(opts), simdjson::SUCCESS);
  ASSERT_EQ(l->doc["run"]["agent"]["backward_per_optimizer_step"].get(bpo), simdjson::SUCCESS);
  EXPECT_EQ(opts, 2.0);
  EXPECT_EQ(bpo, 1.5);
  EXPECT_EQ(l->num("run", "agent", "grad_accum_steps"), 1);
  expect_steps_stop("gan", {});
}

TEST(LoopStyles, GradientAccumulationReportsK) {
  REQUIRE_TORCH();
  auto l = run_loop("grad_accum", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "grad_accum");
  EXPECT_EQ(l->count, 25);  // 800 samples / batch 8 = 100 micro-batches / 4
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  EXPECT_EQ(l->num("run", "agent", "grad_accum_steps"), 4);
  EXPECT_NE(l->cli.out.find("COUNT"), std::string::npos);
  // --steps 5 stops after the 5th optimizer step, not after 5 backward (20 micro-batches).
  expect_steps_stop("grad_accum", {});
}

TEST(LoopStyles, OptimizerRebuiltMidRun) {
  REQUIRE_TORCH();
  auto l = run_loop("rebuilt_optimizer", {"40"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  // Iterations 0-9: the first optimizer; 10-19: the second (the first was dropped, so the second
  // takes over at its first step); 20-39: the third, while the second stays alive in a scheduler.
  // The third takes over only after stepping 3 times in a row without the second (hooks_model
  // STALE_FACTOR x 0 + 2 = 2 tolerated), so iterations 20-22 are one step: 40 - 2 = 38 steps.
  expect_clean(*l, "rebuilt_optimizer", 2);
  EXPECT_EQ(l->count, 40);
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  expect_steps_stop("rebuilt_optimizer", {"40"}, 15);  // past the first rebuild
}

// One model per fold, all alive (kfold.py): the forward timed is the model the fold trains, not
// the first fold's, by the last fold's steps. Each new optimizer takes over after 3 steps in a row
// (STALE_FACTOR x 0 + 2 tolerated), so 2 steps a fold after the first are merged: 120 - 4.
TEST(LoopStyles, KFoldTrainsAModelPerFold) {
  REQUIRE_TORCH();
  auto l = run_loop("kfold", {"3", "40"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "kfold", 4);
  EXPECT_EQ(l->count, 120);
  simdjson::dom::array rows;
  ASSERT_EQ(l->doc["run"]["agent"]["step_table"]["rows"].get(rows), simdjson::SUCCESS);
  ASSERT_GE(rows.size(), 100u);
  // The last fold's last 12 steps each timed its model's forward (2 ms of sleep): the agent looks
  // for the model again at the first 16th step after the chosen one stopped training (hooks_model).
  for (size_t i = rows.size() - 12; i < rows.size(); ++i) {
    double fwd = rows.at(i).at(7);
    EXPECT_GE(fwd, 1.9) << "step " << int64_t(rows.at(i).at(0));
  }
  EXPECT_GE(l->real("run", "agent", "summary", "forward_ms"), 1.9);
  expect_parts_within_step(*l, "kfold");
}

TEST(LoopStyles, LightningStyleClosureTrainer) {
  REQUIRE_TORCH();
  auto l = run_loop("lightning_style", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "lightning_style");
  EXPECT_EQ(l->count, 30);
  EXPECT_EQ(l->str("run", "agent", "step_source"), "optimizer");
  // forward sleeps 3 ms inside step(closure): that is forward time, not optimizer time.
  EXPECT_GE(l->real("run", "agent", "summary", "forward_ms"), 3.0);
  // training_step sleeps 30 ms beside its forward, in the closure: not the optimizer's time either.
  // Counted there, the optimizer's time would be at least the sleep; AdamW's update of 75k
  // parameters takes well under 1 ms (3 ms seen with both cores taken by other work).
  EXPECT_LT(l->real("run", "agent", "summary", "optimizer_ms"), 30.0);
  EXPECT_GE(l->real("run", "agent", "summary", "step_ms"), 33.0);
  expect_parts_within_step(*l, "lightning_style");
  expect_steps_stop("lightning_style", {});
}

TEST(LoopStyles, AutocastEnteredInsideForward) {
  REQUIRE_TORCH();
  auto l = run_loop("trainer_autocast", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "trainer_autocast");
  EXPECT_EQ(l->count, 24);
  std::string_view ac;
  ASSERT_EQ(l->doc["run"]["agent"]["settings"]["autocast_dtype"].get(ac), simdjson::SUCCESS);
  EXPECT_EQ(ac, "torch.bfloat16");
  expect_steps_stop("trainer_autocast", {});
}

TEST(LoopStyles, IterableDatasetWithWorkers) {
  REQUIRE_TORCH();
  auto l = run_loop("iterable", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  expect_clean(*l, "iterable");
  EXPECT_EQ(l->count, 30);  // 240 samples in 2 shards of 120, batch 8
  expect_steps_stop("iterable", {});
}

TEST(LoopStyles, SubprocessesOfTheirOwn) {
  REQUIRE_TORCH();
  auto l = run_loop("subprocesses", {"20"});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  EXPECT_NE(l->cli.out.find("helper done"), std::string::npos);
  expect_clean(*l, "subprocesses");
  EXPECT_EQ(l->count, 20);  // the helper's 3 steps are its own process's, not the job's
  expect_steps_stop("subprocesses", {"20"});
}

TEST(LoopStyles, SysExitMidRunPassesThroughWithCause) {
  REQUIRE_TORCH();
  auto l = run_loop("exit3", {});
  EXPECT_EQ(l->cli.status, 3);
  expect_clean(*l, "exit3");
  EXPECT_EQ(l->count, 7);
  EXPECT_EQ(l->num("run", "exit", "status"), 3);
  EXPECT_EQ(l->str("run", "exit", "cause"), "exit status 3: exit3: leaving with status 3");
  EXPECT_NE(l->cli.err.find("exit3: leaving with status 3"), std::string::npos);  // passed through
  std::string_view verdict;
  ASSERT_EQ(l->doc["verdict"].get(verdict), simdjson::SUCCESS);
  EXPECT_EQ(verdict.find("failed before the first step"), std::string_view::npos);  // it made 7 steps
  // The failure first, then what its steps show.
  EXPECT_EQ(verdict.rfind("The job failed after 7 steps (exit status 3: exit3: leaving with status 3). Of the steps "
                          "that ran: ",
                          0),
            0u)
      << verdict;
}

// torchrun's ranks meet at a free port (rdzv_endpoint localhost:0, PyTorch's way to run several
// single-node jobs on one host): 1.13's --standalone binds 29400, and a second test's torchrun
// beside it failed with "Address already in use".

// A rank that raises under torchrun: the job's cause is that rank's exception, not torchrun's
// own ChildFailedError at the end of the stderr (PyTorch 2.x prefixes the rank's lines and names
// the rank; 1.13 writes them bare and the earliest traceback is the cause, unattributed).
TEST(LoopStyles, ARankThatRaisesUnderTorchrunIsTheCause) {
  REQUIRE_TORCH();
  std::string out = fresh_dir("loops-rank_raises");
  auto cli = run_cli({"-q", "run", "--no-store", "--no-profile", "--out", out, "--", torch_python(), "-m",
                      "torch.distributed.run", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "--nnodes=1", "--nproc_per_node", "2",
                      scripts_dir() + "/loops/rank_raises.py"});
  EXPECT_EQ(cli.status, 1) << cli.err;
  EXPECT_NE(cli.err.find("ChildFailedError"), std::string::npos);  // torchrun's end, passed through
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(slurp(out + "/report.json")).get(doc), simdjson::SUCCESS) << cli.err;
  std::string_view cause, verdict;
  ASSERT_EQ(doc["run"]["exit"]["cause"].get(cause), simdjson::SUCCESS);
  EXPECT_NE(cause.find("ValueError: rank_raises: a bad batch at step 6"), std::string_view::npos) << cause;
  EXPECT_EQ(cause.find("ChildFailedError"), std::string_view::npos) << cause;
  ASSERT_EQ(doc["verdict"].get(verdict), simdjson::SUCCESS);
  EXPECT_EQ(verdict.rfind("The job failed after 6 steps (exit status 1: ", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("ValueError: rank_raises"), std::string_view::npos) << verdict;
  // ... and the rank's line that raised it (rank_raises.py:23), there and in run.exit.
  EXPECT_NE(verdict.find("rank_raises.py:23). "), std::string_view::npos) << verdict;
  int64_t line = 0;
  ASSERT_EQ(doc["run"]["exit"]["failure_site"]["line"].get(line), simdjson::SUCCESS) << cli.err;
  EXPECT_EQ(line, 23);
  simdjson::dom::array tail;
  ASSERT_EQ(doc["run"]["exit"]["stderr_tail"].get(tail), simdjson::SUCCESS);
  EXPECT_EQ(tail.size(), kStderrTailShown);  // the report shows the last lines; the cause came from more
}

// A job that aborts after its script returned (a finaliser during the interpreter's shutdown, as
// PyTorch 2.13's gloo group aborts a DDP rank there): its training ran to the end, and the report
// says the teardown failed, not the training. The same abort mid-run is a death mid-run.
TEST(LoopStyles, AnAbortDuringTheInterpretersShutdownIsAfterTraining) {
  REQUIRE_TORCH();
  auto l = run_loop("abort_at_exit", {"teardown"});
  EXPECT_EQ(l->cli.status, 128 + 6) << l->cli.err;
  expect_clean(*l, "abort_at_exit");
  EXPECT_EQ(l->count, 7);
  bool at_exit = false;
  ASSERT_EQ(l->doc["run"]["exit"]["died_at_exit"].get(at_exit), simdjson::SUCCESS) << l->report;
  EXPECT_TRUE(at_exit);
  std::string_view verdict;
  ASSERT_EQ(l->doc["verdict"].get(verdict), simdjson::SUCCESS);
  EXPECT_EQ(verdict.rfind("The job's script ran to its end (7 steps), then the job failed while Python shut down "
                          "(signal 6",
                          0),
            0u)
      << verdict;
  EXPECT_EQ(verdict.find("process group"), std::string_view::npos) << verdict;  // not a distributed job

  // An abort gives the agent no exit: the steps since its last flush (channel.py, FLUSH_NS) are
  // lost, so the report has at most the 7.
  auto now = run_loop("abort_at_exit", {"now"});
  EXPECT_EQ(now->cli.status, 128 + 6) << now->cli.err;
  const int64_t steps = now->num("run", "agent", "steps");
  EXPECT_GE(steps, 1);
  EXPECT_LE(steps, 7);
  ASSERT_EQ(now->doc["run"]["exit"]["died_at_exit"].get(at_exit), simdjson::SUCCESS) << now->report;
  EXPECT_FALSE(at_exit);
  ASSERT_EQ(now->doc["verdict"].get(verdict), simdjson::SUCCESS);
  EXPECT_EQ(verdict.rfind("The job ended by signal 6 after ", 0), 0u) << verdict;
}

// The same under torchrun: rank 0 aborts in its teardown, and torchrun's summary names it by pid.
TEST(LoopStyles, ARankThatAbortsAfterItsScriptReturnedFailedInTeardown) {
  REQUIRE_TORCH();
  std::string out = fresh_dir("loops-rank_aborts_at_exit");
  auto cli = run_cli({"-q", "run", "--no-store", "--no-profile", "--out", out, "--", torch_python(), "-m",
                      "torch.distributed.run", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "--nnodes=1", "--nproc_per_node", "2",
                      scripts_dir() + "/loops/abort_at_exit.py", "teardown"});
  EXPECT_EQ(cli.status, 1) << cli.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(slurp(out + "/report.json")).get(doc), simdjson::SUCCESS) << cli.err;
  bool at_exit = false;
  ASSERT_EQ(doc["run"]["exit"]["died_at_exit"].get(at_exit), simdjson::SUCCESS);
  EXPECT_TRUE(at_exit) << cli.err;
  std::string_view verdict;
  ASSERT_EQ(doc["verdict"].get(verdict), simdjson::SUCCESS);
  // The cause in brackets is failure_line's (FailureLine tests): PyTorch 2.x's "rank 0: exit code
  // -6 (SIGABRT)"; 1.13 writes its ranks' lines bare, so a line its other rank wrote may come first.
  EXPECT_EQ(verdict.rfind("The job's script ran to its end (7 steps), then the job failed while Python shut down "
                          "(exit status 1: ",
                          0),
            0u)
      << verdict;
  EXPECT_NE(verdict.find("destroy_process_group()"), std::string_view::npos) << verdict;
}

// A loss NaN from the first step counts in every step: the first step is ended by its backward
// (the first marker seen) before the optimizer takes the loop over, and its loss goes with it.
TEST(LoopStyles, ALossNaNFromTheStartCountsEveryStep) {
  REQUIRE_TORCH();
  auto l = run_loop("nan_loss", {});
  expect_clean(*l, "nan_loss");
  EXPECT_EQ(l->count, 12);
  int64_t nonfinite = -1;
  ASSERT_EQ(l->doc["run"]["agent"]["summary"]["nonfinite_losses"].get(nonfinite), simdjson::SUCCESS) << l->report;
  EXPECT_EQ(nonfinite, 12);
  std::string_view verdict;
  ASSERT_EQ(l->doc["verdict"].get(verdict), simdjson::SUCCESS);
  EXPECT_EQ(verdict.rfind("Loss is NaN/Inf in 12 of 12 steps", 0), 0u) << verdict;
}

TEST(LoopStyles, ImportErrorFailsBeforeTheFirstStep) {
  REQUIRE_TORCH();
  auto l = run_loop("import_error", {});
  EXPECT_EQ(l->cli.status, 1);
  // The traceback reaches the terminal untouched...
  EXPECT_NE(l->cli.err.find("Traceback (most recent call last):"), std::string::npos) << l->cli.err;
  // ...and the report says what happened, with its last lines.
  std::string_view verdict;
  ASSERT_EQ(l->doc["verdict"].get(verdict), simdjson::SUCCESS) << l->report;
  EXPECT_EQ(verdict, "The job failed before the first step (exit status 1).");
  simdjson::dom::array tail;
  ASSERT_EQ(l->doc["run"]["exit"]["stderr_tail"].get(tail), simdjson::SUCCESS);
  ASSERT_GT(tail.size(), 0u);
  std::string_view last;
  ASSERT_EQ(tail.at(tail.size() - 1).get(last), simdjson::SUCCESS);
  EXPECT_EQ(last, "ModuleNotFoundError: No module named 'trainscope_test_module_that_does_not_exist'");
  EXPECT_NE(l->cli.out.find("The job failed before the first step (exit status 1)"), std::string::npos) << l->cli.out;
  EXPECT_NE(l->cli.out.find("ModuleNotFoundError"), std::string::npos) << l->cli.out;
}

// A script that builds its model and exits 0 without training (pytorch/examples' FSDP2 example
// on a host without GPUs): the report says no step ran, with its last stderr line, and no finding
// about a training that never happened. Before, the start-up's threads read as thread-oversubscription.
TEST(LoopStyles, ACleanExitBeforeAnyStepSaysNoStepRan) {
  REQUIRE_TORCH();
  auto l = run_loop("no_step", {});
  EXPECT_EQ(l->cli.status, 0) << l->cli.err;
  std::string_view verdict;
  ASSERT_EQ(l->doc["verdict"].get(verdict), simdjson::SUCCESS) << l->report;
  EXPECT_EQ(verdict, "The job ended before its first training step (exit status 0): there is no step to measure.");
  simdjson::dom::array findings;
  ASSERT_EQ(l->doc["findings"].get(findings), simdjson::SUCCESS);
  ASSERT_EQ(findings.size(), 1u) << l->report;
  std::string_view why;
  ASSERT_EQ(findings.at(0)["explanation"].get(why), simdjson::SUCCESS);
  EXPECT_NE(why.find("Unable to locate sufficient 2 gpus"), std::string_view::npos) << why;
}

}  // namespace
}  // namespace ts::run::test
