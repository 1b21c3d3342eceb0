#pragma once
// Running a command from a test and reading what it left behind: the plumbing shared by the
// tests that drive the real `trainscope` binary (tests/cli, tests/fleet).
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace ts::test {

struct CommandResult {
  int code = -1;  // exit status, -1 when killed by a signal
  std::string out, err;
};

// The whole file, "" when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `cmd` through /bin/sh and returns its standard output.
inline std::string run_cmd(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Runs `cmd` through /bin/sh with its standard error sent to `err_path`: exit status, stdout,
// stderr.
inline CommandResult run_capture(const std::string& cmd, const std::string& err_path) {
  CommandResult r;
  FILE* p = popen((cmd + " 2> " + err_path).c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(err_path);
  return r;
}

}  // namespace ts::test
