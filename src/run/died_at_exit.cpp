#include "run/died_at_exit.h"

#include "util/failure_line.h"

namespace ts::run {

bool died_at_exit(pid_t child, int exit_signal, const std::vector<std::string>& stderr_tail,
                  const std::vector<TextRecord>& texts) {
  int64_t pid = 0;
  int signal = 0;
  if (exit_signal) {
    pid = child, signal = exit_signal;
  } else if (auto d = torchrun_root_death(stderr_tail)) {
    pid = d->pid, signal = d->signal;
  }
  // A signal another process sent (a scheduler's limit, Ctrl-C) may arrive at any moment: only a
  // crash's own signal (SIGABRT, SIGSEGV, ...) says the teardown failed.
  if (!pid || signal_from_outside(signal)) return false;
  for (const auto& t : texts)
    if (t.kind == "end" && t.pid == pid) return t.get("uncaught").empty() && t.get("reason") != "steps";
  return false;
}

}  // namespace ts::run
