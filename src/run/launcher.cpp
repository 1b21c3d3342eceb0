#include "run/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "util/error.h"

extern char** environ;

namespace ts::run {
namespace {

// Signals sent to trainscope that belong to the job: stop (INT, TERM, HUP, QUIT) and the
// user-defined pair batch systems use (Slurm's --signal=USR1@T before pre-emption, requeue hooks
// such as Lightning's SLURMEnvironment). Their default action would kill trainscope and lose the
// report; forwarded, the job decides and we write the report when it ends.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

std::atomic<pid_t> g_child{-1};
std::atomic<int> g_last_signal{0};

// Forwards a signal to the child unless the kernel sent it to the whole foreground process
// group (a Ctrl-C at the terminal), in which case the child already has it.
void forward(int sig, siginfo_t* info, void*) {
  int saved = errno;
  g_last_signal = sig;
  pid_t c = g_child.load();
  bool from_tty = info && info->si_code == SI_KERNEL;
  if (c > 0 && !from_tty) kill(c, sig);
  errno = saved;
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit code {}", code);
}

Launcher::Launcher(std::vector<std::string> argv, std::map<std::string, std::string> env_set)
    : argv_(std::move(argv)), env_set_(std::move(env_set)) {}

Launcher::~Launcher() {
  if (pid_ > 0 && g_child.load() == pid_) g_child = -1;
}

pid_t Launcher::start() {
  if (argv_.empty()) throw UserError("run: no command given (usage: trainscope run [options] -- COMMAND ...)");
  // Build the environment before forking (no allocation in the child).
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos && env_set_.count(s.substr(0, eq))) continue;
    env.push_back(std::move(s));
  }
  for (const auto& [k, v] : env_set_) env.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_) args.push_back(s.data());
  args.push_back(nullptr);

  // A pipe closed on exec tells us whether exec worked, and errno if not.
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) throw UserError(std::string("run: pipe: ") + std::strerror(errno));

  struct sigaction sa{};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  // Block the signals across fork so the child starts with default handlers installed cleanly.
  sigset_t block, old;
  sigemptyset(&block);
  for (int s : kForwarded) sigaddset(&block, s);
  sigprocmask(SIG_BLOCK, &block, &old);

  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    throw UserError(std::string("run: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(errpipe[0]);
    for (int s : kForwarded) signal(s, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (stderr_fd_ >= 0 && stderr_fd_ != STDERR_FILENO) dup2(stderr_fd_, STDERR_FILENO);
    if (stdout_to_stderr_) dup2(STDERR_FILENO, STDOUT_FILENO);
    if (!cwd_.empty() && chdir(cwd_.c_str()) != 0) {
      int e = errno;
      (void)!write(errpipe[1], &e, sizeof e);
      _exit(127);
    }
    execvpe(args[0], args.data(), envp.data());
    int e = errno;
    (void)!write(errpipe[1], &e, sizeof e);
    _exit(127);
  }
  close(errpipe[1]);
  g_child = pid;
  pid_ = pid;
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
  sigprocmask(SIG_SETMASK, &old, nullptr);

  int child_errno = 0;
  ssize_t n;
  do n = read(errpipe[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(errpipe[0]);
  if (n == sizeof child_errno) {
    int st;
    waitpid(pid, &st, 0);
    g_child = -1;
    pid_ = -1;
    throw UserError(fmt::format("run: {}: cannot start: {}", argv_[0], std::strerror(child_errno)),
                    child_errno == ENOENT ? 127 : 126);
  }
  return pid;
}

ExitStatus Launcher::wait(std::chrono::milliseconds period, const std::function<void()>& tick) {
  ExitStatus st;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      if (WIFEXITED(status)) st.code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
      break;
    }
    if (r < 0 && errno != EINTR) break;
    if (tick) tick();
    std::this_thread::sleep_for(period);
  }
  g_child = -1;
  // Back to the default handlers: the job is over.
  for (int s : kForwarded) signal(s, SIG_DFL);
  return st;
}

void Launcher::signal_child(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

int Launcher::last_forwarded_signal() { return g_last_signal.load(); }

}  // namespace ts::run
