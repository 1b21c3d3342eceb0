#pragma once
// Launching one of the Python runners (agent/trainscope_lab/*) for one configuration and reading
// the one result line it prints ("@ts-result {json}"). Finding the interpreter: --python, then
// $TRAINSCOPE_PYTHON, then `python3` on PATH, then /usr/bin/python3 - the first that has torch.
#include <memory>
#include <string>
#include <vector>

#include <simdjson.h>

namespace ts::experiment {

class ProgressBar;

struct PythonEnv {
  std::string python;     // interpreter path or name
  std::string agent_dir;  // folder holding trainscope_lab/
};

// Throws ts::UserError naming what was tried when no interpreter imports torch.
PythonEnv find_python(const std::string& requested = "");

struct RunnerResult {
  std::string status;  // ok | skipped | error (error also when the process died or timed out)
  std::string reason;  // for skipped / error: one line
  double wall_s = 0;
  std::shared_ptr<simdjson::dom::parser> parser;
  simdjson::dom::element json;  // the result object (valid when the line was parsed)
  bool has_json = false;

  double num(const char* key, double dflt = 0) const;
  int64_t integer(const char* key, int64_t dflt = 0) const;
  bool flag(const char* key, bool dflt = false) const;
  std::string str(const char* key, const std::string& dflt = "") const;
  std::vector<double> nums(const char* key) const;
};

struct RunnerCall {
  std::string module;  // e.g. "trainscope_lab.lab_runner"
  std::vector<std::string> args;
  double timeout_s = 600;
  std::vector<std::pair<std::string, std::string>> env;
};

// Runs one configuration; progress lines from the runner update `bar` (may be null).
RunnerResult run_runner(const PythonEnv& py, const RunnerCall& call, ProgressBar* bar);

// Parses a runner's stdout (exposed for tests): the last "@ts-result " line wins.
RunnerResult parse_runner_output(const std::string& out);

}  // namespace ts::experiment
