#pragma once
// The job's stderr, passed through to ours byte for byte while its last lines are kept for the
// report (a job that fails before its first step is reported with the error it printed).
// When our stderr is a terminal the job writes into a pseudo-terminal of the same size (output
// processing off), so it still sees a terminal (colours, progress bars, isatty() as without us);
// otherwise into a pipe. A thread copies everything to our stderr as it arrives. At the end, if
// processes the job left behind still hold the write end, a small forked copier takes over the
// read end, so they never get SIGPIPE or EIO because trainscope exited.
// With `drop_kineto_markers`, Kineto's USDT marker lines are taken out on the way (kineto_markers.h).
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "run/kineto_markers.h"

namespace ts::run {

class StderrTee {
 public:
  // Throws UserError when neither a pty nor a pipe can be made.
  explicit StderrTee(bool drop_kineto_markers = false);
  ~StderrTee();
  StderrTee(const StderrTee&) = delete;
  StderrTee& operator=(const StderrTee&) = delete;

  int child_fd() const { return write_fd_; }  // dup2 this onto the child's fd 2
  // Where the job's bytes go instead of our stderr (the live panel writes them around itself);
  // set before parent_after_fork(). The copier that may outlive us writes to stderr directly.
  void set_sink(std::function<void(const char*, size_t)> sink) { sink_ = std::move(sink); }
  void parent_after_fork();                   // closes our copy of the write end, starts copying
  // After the job exited: waits up to `quiet_ms` for the last bytes, hands the rest to a copier
  // if writers remain, and returns the last `max_lines` lines (ANSI escapes and \r removed).
  std::vector<std::string> finish(int quiet_ms = 200, size_t max_lines = 12);
  bool is_pty() const { return pty_; }

 private:
  void copy_loop();
  void emit(const char* p, size_t n);  // to the sink or our stderr, and into the tail
  // What of p[0..n) passes (Kineto's marker lines out, when asked): p itself, or `scratch`.
  std::string_view passed(const char* p, size_t n, std::string& scratch);
  int read_fd_ = -1, write_fd_ = -1;
  int wake_[2] = {-1, -1};
  bool pty_ = false;
  std::thread thread_;
  std::string tail_;  // the last kTailBytes bytes
  std::function<void(const char*, size_t)> sink_;
  std::optional<KinetoMarkerFilter> markers_;
  std::atomic<bool> eof_{false};
};

// The last `max_lines` non-empty lines of `bytes`, with ANSI escape sequences and carriage-return
// overwrites (progress bars) resolved. Pure: tested on crafted input.
std::vector<std::string> last_lines(const std::string& bytes, size_t max_lines);

}  // namespace ts::run
