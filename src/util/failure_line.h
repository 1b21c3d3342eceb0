#pragma once
// The line that says why a job failed, from the last lines it wrote to stderr. A Python traceback
// ends with its exception, but the exception's message may run over many lines (PyTorch's
// weights_only refusal is eleven), so the last line is often advice, not the error. Here: the
// exception line of the last traceback (the first unindented line after its frames), else the
// last line that says something (a letter or a digit: not blank, not a banner of asterisks),
// unless `traceback_only`: a job stopped by a signal from outside (SIGTERM from a scheduler's
// limit, SIGKILL) died at whatever line it had written last, which is not why. A torchrun job's
// failure is its root-cause rank's ("rank 1: ValueError: ...", or its exit code and signal when
// it left no traceback), not torchrun's own ChildFailedError: the tail must reach back past
// torchrun's summary (about 45 lines) to the rank's traceback.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ts {

std::string failure_line(const std::vector<std::string>& stderr_tail, bool traceback_only = false);

// The line of the user's code the failure came from: the innermost frame of the traceback
// failure_line reads (torchrun: the root-cause rank's) whose file is the user's, not an installed
// package's (site-packages, dist-packages), the standard library's or generated (<frozen runpy>).
// nullopt without a traceback, or when every frame is a library's.
struct FailureFrame {
  std::string file;      // as the traceback prints it (absolute for a script run by path)
  int64_t line = 0;
  std::string function;  // "<module>" at top level
  std::string code;      // the source line, stripped ("" when Python could not read it)
};
std::optional<FailureFrame> failure_frame(const std::vector<std::string>& stderr_tail);

// Signals another process sends (a scheduler's time limit, the OOM killer, Ctrl-C, a closed
// terminal): they arrive whatever the job last wrote, so only a traceback then says why
// (failure_line's `traceback_only`). A crash's own signal (SIGSEGV, SIGABRT) follows its message.
bool signal_from_outside(int signal);

// A process that a signal ended, as torchrun's summary names its root-cause rank
// ("exitcode  : -6 (pid: 8229)  (SIGABRT)"): nullopt when the tail has no summary or the rank
// exited with a code.
struct ProcessDeath {
  int64_t pid = 0;
  int signal = 0;
};
std::optional<ProcessDeath> torchrun_root_death(const std::vector<std::string>& tail);

}  // namespace ts
