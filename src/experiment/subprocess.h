#pragma once
// Running one experiment configuration as a child process: its own process group (so DataLoader
// workers die with it), stdout captured whole, stderr streamed line by line (progress lines) with
// a bounded tail kept for error messages, and a wall-clock timeout after which the group is killed.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ts::experiment {

struct ChildOptions {
  std::vector<std::string> argv;                             // argv[0] is looked up on PATH
  std::vector<std::pair<std::string, std::string>> env;      // added to (or replacing in) ours
  double timeout_s = 600;                                    // <= 0: none
  std::function<void(std::string_view line)> on_stderr_line;  // each complete stderr line
  size_t stderr_tail_lines = 40;
};

struct ChildResult {
  int exit_code = -1;     // -1 when killed by a signal
  int term_signal = 0;
  bool timed_out = false;
  bool spawn_failed = false;
  std::string out;        // all of stdout
  std::vector<std::string> err_tail;  // last lines of stderr (progress lines excluded by the callback's caller)
  double wall_s = 0;
};

ChildResult run_child(const ChildOptions& opt);

}  // namespace ts::experiment
