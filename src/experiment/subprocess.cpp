#include "experiment/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>

extern char** environ;

namespace ts::experiment {
namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> merged_env(const std::vector<std::pair<std::string, std::string>>& add) {
  std::map<std::string, std::string> m;
  for (char** e = environ; e && *e; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos) m[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (auto& [k, v] : add) m[k] = v;
  std::vector<std::string> out;
  for (auto& [k, v] : m) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

ChildResult run_child(const ChildOptions& opt) {
  ChildResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return r.spawn_failed = true, r;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]), close(out_pipe[1]);
    return r.spawn_failed = true, r;
  }
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> env = merged_env(opt.env);
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = opt.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    r.spawn_failed = true;
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // both sides: no race with the child's own call
  close(out_pipe[1]);
  close(err_pipe[1]);

  std::deque<std::string> tail;
  std::string err_buf;
  auto flush_lines = [&](bool final) {
    size_t start = 0;
    for (;;) {
      auto nl = err_buf.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = err_buf.substr(start, nl - start);
      start = nl + 1;
      if (opt.on_stderr_line) opt.on_stderr_line(line);
      if (line.rfind("@ts-progress", 0) != 0) {
        tail.push_back(line);
        if (tail.size() > opt.stderr_tail_lines) tail.pop_front();
      }
    }
    err_buf.erase(0, start);
    if (final && !err_buf.empty()) {
      tail.push_back(err_buf);
      err_buf.clear();
    }
  };

  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  bool killed = false;
  while (open_fds > 0) {
    int wait_ms = 200;
    if (opt.timeout_s > 0 && !killed && now_s() - t0 > opt.timeout_s) {
      kill(-pid, SIGTERM);
      r.timed_out = killed = true;
      usleep(500000);
      kill(-pid, SIGKILL);
    }
    if (killed && now_s() - t0 > opt.timeout_s + 5) break;  // a grandchild that left our group holds the pipe
    int n = poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) break;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t k = read(f.fd, buf, sizeof buf);
      if (k <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      if (f.fd == out_pipe[0]) {
        r.out.append(buf, size_t(k));
      } else {
        err_buf.append(buf, size_t(k));
        flush_lines(false);
      }
    }
  }
  flush_lines(true);
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // stragglers (orphaned DataLoader workers) of our own group
  r.wall_s = now_s() - t0;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
  }
  r.err_tail.assign(tail.begin(), tail.end());
  return r;
}

}  // namespace ts::experiment
