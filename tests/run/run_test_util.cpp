#include "run_test_util.h"

#include "support/torch_python.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace ts::run::test {
namespace fs = std::filesystem;

const std::string& torch_python() { return ts::test::torch_python(); }

std::string scripts_dir() { return std::string(TS_SOURCE_DIR) + "/tests/run/scripts"; }
std::string script(const std::string& name) { return scripts_dir() + "/" + name; }

std::string fresh_dir(const std::string& name) {
  // A suite registered twice (its "torch1.13:" copy sets TRAINSCOPE_TEST_PYTHON) may run beside
  // itself under ctest -j: each copy gets its own folders.
  const char* forced = std::getenv("TRAINSCOPE_TEST_PYTHON");
  fs::path p = fs::path(TS_BINARY_DIR) / (forced && *forced ? "tests-run-out-forced-python" : "tests-run-out") / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

RunOptions script_options(std::vector<std::string> command, const std::string& out, bool profile, int64_t steps) {
  RunOptions opt;
  opt.command = std::move(command);
  opt.out_dir = out;
  opt.profile = profile;
  opt.store = false;
  opt.quiet = true;
  opt.steps = steps;
  return opt;
}

RunResult run_script(std::vector<std::string> command, const std::string& out, bool profile, int64_t steps) {
  return run_session(script_options(std::move(command), out, profile, steps));
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd, const std::vector<std::string>& env) {
  std::string dir = fresh_dir("cli-io-" + std::to_string(getpid()));
  std::string out = dir + "/out", err = dir + "/err";
  std::string cmd = cwd.empty() ? "" : "cd '" + cwd + "' && ";
  for (const auto& e : env) cmd += e + " ";
  cmd += "'" + std::string(TS_CLI) + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >'" + out + "' 2>'" + err + "'";
  int st = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

pid_t spawn_sh(const std::string& script) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

void reap(pid_t pid) {
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
}

}  // namespace ts::run::test
