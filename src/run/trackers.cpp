#include "run/trackers.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace ts::run {

std::vector<std::string> export_to_trackers(const TrackerExport& t, const std::string& python,
                                            const std::string& agent_dir, const std::string& report_path) {
  if (!t.any()) return {};
  const std::string what = t.mlflow && t.wandb ? "--mlflow/--wandb" : t.mlflow ? "--mlflow" : "--wandb";
  if (python.empty())
    return {what + ": no export: the agent never reported the job's Python (not a Python job, or it ended first)"};
  const std::string script = agent_dir + "/trainscope_export/trackers.py";
  if (!std::filesystem::exists(script)) return {what + ": " + script + ": missing from the agent folder"};
  std::vector<std::string> args = {python, script};
  if (t.mlflow) args.push_back("--mlflow");
  if (t.wandb) args.push_back("--wandb");
  args.push_back(report_path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Its stdout too goes to our stderr: `run --json -` keeps stdout for the report.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, python.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return {what + ": " + python + ": cannot start: " + std::strerror(rc)};
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return {};
  // The exporter said why on stderr, one line per tracker.
  return {what + ": export incomplete (" +
          (WIFEXITED(st) ? "exit status " + std::to_string(WEXITSTATUS(st)) : "killed by signal " + std::to_string(WTERMSIG(st))) +
          "; see the line above)"};
}

}  // namespace ts::run
