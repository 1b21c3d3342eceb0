#pragma once
// Helpers for tests/run: finding a Python with torch, running trainscope in-process (numbers
// straight from RunResult) or as the CLI (exit codes, signals, stdout).
#include <optional>
#include <string>
#include <vector>

#include "run/run_session.h"

namespace ts::run::test {

// "/usr/bin/python3" when it imports torch, else "" (tests then skip with a message).
const std::string& torch_python();
std::string scripts_dir();  // tests/run/scripts
std::string fresh_dir(const std::string& name);  // empty directory under the build tree

// run_session with the test defaults: quiet, no store, no profiler unless asked.
RunResult run_script(std::vector<std::string> command, const std::string& out, bool profile = false,
                     int64_t steps = 0);

struct CliResult {
  int status = -1;  // shell-style: exit code or 128+signal
  std::string out, err;
};
// Runs the trainscope binary with args; `cwd` "" = current; env entries "K=V" added.
CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd = "",
                  const std::vector<std::string>& env = {});

std::string slurp(const std::string& path);
int count(const std::string& hay, const std::string& needle);

}  // namespace ts::run::test
