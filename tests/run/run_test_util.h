#pragma once
// Helpers for tests/run: finding a Python with torch, running trainscope in-process (numbers
// straight from RunResult) or as the CLI (exit codes, signals, stdout).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "run/run_session.h"
#include "support/one_intra_op_thread.h"

// A test that runs PyTorch fails, naming the fix, where no Python imports torch.
#define REQUIRE_TORCH() \
  if (::ts::run::test::torch_python().empty()) GTEST_FAIL() << "no Python with torch found (scripts/bootstrap makes .venv)"

namespace ts::run::test {

// The Python the real runs use (tests/support/torch_python.h), "" when none imports torch.
const std::string& torch_python();
std::string scripts_dir();  // tests/run/scripts
std::string script(const std::string& name);  // tests/run/scripts/<name>
std::string fresh_dir(const std::string& name);  // empty directory under the build tree

// The test defaults: quiet, no store, no profiler unless asked; run_script runs them.
RunOptions script_options(std::vector<std::string> command, const std::string& out, bool profile = false,
                          int64_t steps = 0);
RunResult run_script(std::vector<std::string> command, const std::string& out, bool profile = false,
                     int64_t steps = 0);

struct CliResult {
  int status = -1;  // shell-style: exit code or 128+signal
  std::string out, err;
};
// Runs the trainscope binary with args; `cwd` "" = current; env entries "K=V" added.
CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd = "",
                  const std::vector<std::string>& env = {});

// While alive, runs started by the test get one intra-op thread (OMP_NUM_THREADS=1). For tests
// about the data wait, whose "compute" is a sleep: PyTorch 2.x's intra-op pool on this 2-core
// machine, shared with other tests (ctest -j2), makes a tiny backward wait for its second thread
// (measured here: 0.2 ms alone, 18-40 ms at load 4), which is not what those tests measure.
using ts::test::OneIntraOpThread;  // support/one_intra_op_thread.h

// A child running `script` under /bin/sh (a busy loop, a small process tree); reap() kills it and
// waits for it.
pid_t spawn_sh(const std::string& script);
void reap(pid_t pid);

std::string slurp(const std::string& path);
int count(const std::string& hay, const std::string& needle);

}  // namespace ts::run::test
