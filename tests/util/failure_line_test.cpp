// failure_line: the exception line of the last Python traceback in a job's stderr tail, on a real
// PyTorch refusal whose message runs past the exception line (tests/data/stderr), and on the
// shapes around it.
#include <gtest/gtest.h>

#include <csignal>

#include "support/file_lines.h"
#include "util/failure_line.h"

namespace ts {
namespace {

using test::file_lines;

TEST(FailureLine, ThePythonExceptionNotTheAdviceAfterIt) {
  auto tail = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/weights_only_refusal.txt");
  ASSERT_GE(tail.size(), 10u);
  std::string l = failure_line(tail);
  EXPECT_EQ(l.rfind("_pickle.UnpicklingError: Weights only load failed.", 0), 0u) << l;
  EXPECT_NE(tail.back(), l);  // the last line is the documentation pointer
}

TEST(FailureLine, TheLastOfChainedTracebacks) {
  std::vector<std::string> tail = {"Traceback (most recent call last):",
                                   "  File \"a.py\", line 3, in <module>",
                                   "    import foo",
                                   "ModuleNotFoundError: No module named 'foo'",
                                   "",
                                   "During handling of the above exception, another exception occurred:",
                                   "",
                                   "Traceback (most recent call last):",
                                   "  File \"a.py\", line 5, in <module>",
                                   "    raise RuntimeError('no backend')",
                                   "RuntimeError: no backend",
                                   ""};
  EXPECT_EQ(failure_line(tail), "RuntimeError: no backend");
}

TEST(FailureLine, WithoutATracebackTheLastNonBlankLine) {
  EXPECT_EQ(failure_line({"sh: 1: pythn: not found", "", "  "}), "sh: 1: pythn: not found");
  EXPECT_EQ(failure_line({}), "");
  EXPECT_EQ(failure_line({"", " "}), "");
  // torchrun's banner around its OMP_NUM_THREADS notice says nothing either.
  EXPECT_EQ(failure_line({"Unable to locate sufficient 2 gpus to run this example. Exiting.",
                          "*****************************************"}),
            "Unable to locate sufficient 2 gpus to run this example. Exiting.");
  // A traceback cut short (only its frames left in the tail): the last line, as it came.
  EXPECT_EQ(failure_line({"Traceback (most recent call last):", "  File \"a.py\", line 1, in <module>"}),
            "  File \"a.py\", line 1, in <module>");
}

// A job stopped from outside (pytorch/examples siamese_network under `timeout`, SIGTERM at step
// 759): its last stderr line was a profiler log line, quoted as the cause. Only a traceback's
// exception line says why then (Ctrl-C's KeyboardInterrupt).
TEST(FailureLine, StoppedFromOutsideOnlyATracebackSaysWhy) {
  const std::vector<std::string> log = {"Train Epoch: 1 [48000/60000]",
                                        "ERROR:2026-11-28 23:44:51 DeviceProperties.cpp:56] gpuGetDeviceCount failed"};
  EXPECT_EQ(failure_line(log, true), "");
  EXPECT_EQ(failure_line(log), log[1]);
  const std::vector<std::string> interrupted = {"Traceback (most recent call last):", "  File \"main.py\", line 9, in <module>",
                                                "    loss.backward()", "KeyboardInterrupt"};
  EXPECT_EQ(failure_line(interrupted, true), "KeyboardInterrupt");
  // Which signals count as from outside: a scheduler's, the OOM killer's, Ctrl-C, a closed
  // terminal; not a crash's own (its message is the last line).
  for (int sig : {SIGTERM, SIGKILL, SIGINT, SIGHUP}) EXPECT_TRUE(signal_from_outside(sig)) << sig;
  for (int sig : {0, SIGSEGV, SIGABRT, SIGBUS}) EXPECT_FALSE(signal_from_outside(sig)) << sig;
}


// torchrun's own traceback ends in ChildFailedError, which says nothing: the failure is the root
// cause rank's. Real PyTorch 2.13 stderr (tests/data/stderr): rank 1 raised; rank 0 then failed too
// (its peer gone), later, so the last rank traceback in the tail is rank 0's, not the cause.
TEST(FailureLine, ATorchrunJobFailsWithItsRootCauseRanksException) {
  auto tail = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_raised.txt");
  ASSERT_GE(tail.size(), 50u);
  EXPECT_EQ(failure_line(tail), "rank 1: ValueError: bad batch at step 5");
  // Older PyTorch wrote a rank's lines bare, and its "first observed" rank is the first it polled:
  // the earliest traceback is then the first failure (rank 0's lost peer came after), unattributed.
  std::vector<std::string> bare, bare_one;
  for (auto l : tail) {
    bool rank0 = l.rfind("[rank0]:", 0) == 0;
    for (const char* p : {"[rank0]: ", "[rank1]: ", "[rank0]:", "[rank1]:"})
      if (l.rfind(p, 0) == 0) l = l.substr(std::string(p).size());
    bare.push_back(l);
    if (!rank0) bare_one.push_back(l);
  }
  EXPECT_EQ(failure_line(bare), "ValueError: bad batch at step 5");
  EXPECT_EQ(failure_line(bare_one), "ValueError: bad batch at step 5");
}

// A failure inside init_process_group, before PyTorch 2.x prefixes a rank's lines: both ranks'
// tracebacks are bare, and the earliest one's exception is the cause.
TEST(FailureLine, ATorchrunFailureBeforeTheProcessGroupExistsIsTheEarliestTraceback) {
  auto tail = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_init_failed.txt");
  ASSERT_GE(tail.size(), 40u);
  EXPECT_EQ(failure_line(tail), "ValueError: init_process_group device_id parameter must be an accelerator with an index");
}

TEST(FailureLine, ATorchrunRankThatAbortedWithoutATracebackGivesItsSignal) {
  auto tail = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_aborted.txt");
  ASSERT_GE(tail.size(), 40u);
  EXPECT_EQ(failure_line(tail), "rank 0: exit code -6 (SIGABRT)");
  EXPECT_EQ(failure_line(tail, true), "rank 0: exit code -6 (SIGABRT)");
  // A summary without its rank (cut short): the generic rule, torchrun's exception line.
  std::vector<std::string> cut(tail.begin(), tail.end());
  while (!cut.empty() && cut.back().find("Root Cause") == std::string::npos) cut.pop_back();
  ASSERT_FALSE(cut.empty());
  EXPECT_NE(failure_line(cut).find("ChildFailedError"), std::string::npos) << failure_line(cut);
}

// The rank whose death torchrun observed first, as a process: its pid and signal. A rank that
// exited with a code (it raised) is no death by signal.
TEST(TorchrunRootDeath, TheRankASignalEndedWithItsPid) {
  auto aborted = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_aborted.txt");
  auto d = torchrun_root_death(aborted);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pid, 12698);
  EXPECT_EQ(d->signal, 6);
  auto raised = file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_raised.txt");
  EXPECT_FALSE(torchrun_root_death(raised));
  EXPECT_FALSE(torchrun_root_death({"Traceback (most recent call last):", "  File \"x.py\"", "ValueError: no"}));
}

// failure_frame: the user's line behind the failure, the innermost frame of the traceback that
// failure_line reads whose file is the user's.
TEST(FailureFrame, TheUsersLineUnderTheLibrarysFrames) {
  // The refusal is raised in torch/serialization.py; the user's line is the torch.load call.
  auto f = failure_frame(file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/weights_only_refusal.txt"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, "/tmp/pub/time_sequence_prediction/train.py");
  EXPECT_EQ(f->line, 47);
  EXPECT_EQ(f->function, "<module>");
  EXPECT_EQ(f->code, "data = torch.load('traindata.pt')");  // not the carets under it
}

TEST(FailureFrame, ATorchrunJobsIsItsRootCauseRanks) {
  // Rank 1 raised in the script; rank 0's traceback (its peer gone) is the other one.
  auto f = failure_frame(file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_raised.txt"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, "/tmp/tr31/fail/train.py");
  EXPECT_EQ(f->line, 10);
  EXPECT_EQ(f->code, "raise ValueError(\"bad batch at step 5\")");
  // Bare tracebacks interleaved (before the process group, or 1.13): the first one written,
  // down to the user's deepest frame in it, not torchrun's <frozen runpy> frames at the end.
  f = failure_frame(file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_init_failed.txt"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, "/tmp/fsdp2/ex_init.py");
  EXPECT_EQ(f->line, 52);
  EXPECT_EQ(f->function, "main");
  EXPECT_EQ(f->code, "torch.distributed.init_process_group(backend=backend, device_id=device)");
}

TEST(FailureFrame, NoneWithoutAUserFrame) {
  // Only a library's and the standard library's frames (python -m of an installed module).
  EXPECT_FALSE(failure_frame({"Traceback (most recent call last):",
                              "  File \"<frozen runpy>\", line 198, in _run_module_as_main",
                              "  File \"/usr/lib/python3.11/runpy.py\", line 88, in _run_code",
                              "  File \"/venv/lib/python3.11/site-packages/pkg/cli.py\", line 3, in main",
                              "    raise SystemExit('bad flag')",
                              "SystemExit: bad flag"}));
  EXPECT_FALSE(failure_frame({"Killed"}));
  EXPECT_FALSE(failure_frame({}));
  // The last of chained tracebacks; a frame whose source Python could not read has no code.
  auto f = failure_frame({"Traceback (most recent call last):", "  File \"a.py\", line 3, in <module>",
                          "    import foo", "ModuleNotFoundError: No module named 'foo'", "",
                          "During handling of the above exception, another exception occurred:", "",
                          "Traceback (most recent call last):", "  File \"/home/u/lib/pythonic/a.py\", line 5, in <module>",
                          "RuntimeError: no backend"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, "/home/u/lib/pythonic/a.py");  // "lib/python" then no version digit: not the standard library
  EXPECT_EQ(f->line, 5);
  EXPECT_EQ(f->code, "");
}

}  // namespace
}  // namespace ts
