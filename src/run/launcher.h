#pragma once
// Launching the user's command: fork + exec with the user's own stdin/stdout/stderr and the
// same process group (so the terminal's Ctrl-C and job control reach it as if run directly).
// While it runs, SIGINT/TERM/HUP/QUIT/USR1/USR2 sent to trainscope are forwarded to it; a SIGINT that
// came from the terminal already reached the child (same process group) and is not sent twice.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ts::run {

struct ExitStatus {
  int code = -1;    // exit code when it exited
  int signal = 0;   // signal that killed it, 0 if it exited
  // What trainscope exits with: the child's code, or 128 + signal.
  int shell_code() const { return signal ? 128 + signal : code; }
  std::string describe() const;
};

class Launcher {
 public:
  // `env_set` entries replace or add variables in the child's environment.
  Launcher(std::vector<std::string> argv, std::map<std::string, std::string> env_set);
  ~Launcher();

  // The child's fd 2 becomes `fd` (StderrTee::child_fd()); -1 (default): trainscope's own stderr.
  void set_stderr(int fd) { stderr_fd_ = fd; }
  // The child's stdout goes to our stderr (trainscope verify --json keeps stdout for its JSON).
  void stdout_to_stderr(bool on) { stdout_to_stderr_ = on; }
  // The child starts in `dir` ("" = ours): verify --patch runs the patched copy of the project there.
  void set_cwd(std::string dir) { cwd_ = std::move(dir); }
  // Starts the child; throws UserError when the command cannot be started (not found, ...).
  pid_t start();
  pid_t pid() const { return pid_; }
  // Waits for the child, calling `tick` about every `period` while it runs.
  ExitStatus wait(std::chrono::milliseconds period, const std::function<void()>& tick);
  // Sends a signal to the child (used for the --steps fallback).
  void signal_child(int sig) const;
  // Signals the user sent to trainscope while the child ran (forwarded), most recent last.
  static int last_forwarded_signal();

 private:
  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_set_;
  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  bool stdout_to_stderr_ = false;
  std::string cwd_;
};

}  // namespace ts::run
