// Usage errors from every command are one line on stderr, "trainscope: <problem> (see --help)",
// nothing on stdout, exit status 2; --help and --version still print and exit 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CommandResult;

Result run(const std::string& args) {
  fs::path err = fs::temp_directory_path() / fmt::format("ts_usage_err_{}.txt", getpid());
  Result r = ts::test::run_capture(fmt::format("timeout 60 {} {} < /dev/null", TS_CLI, args), err.string());
  fs::remove(err);
  return r;
}

// One line: "trainscope: <problem> (see --help)\n", exit 2, stdout untouched.
void expect_usage_error(const std::string& args, const std::string& problem) {
  SCOPED_TRACE("trainscope " + args);
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.err.rfind("trainscope: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" (see --help)\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Run with --help"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
}

}  // namespace

TEST(UsageErrors, RangeAndValidationErrorsAreOneLine) {
  expect_usage_error("analyze --top 0 x.json", "analyze: --top: Value 0 not in range 1 to 1000");
  expect_usage_error("analyze --top abc x.json", "--top");
  expect_usage_error("analyze --threads 999 x.json", "--threads");
  expect_usage_error("analyze --steps", "--steps");
  expect_usage_error("runs -n many", "runs: ");
  expect_usage_error("doctor --pid x", "doctor: --pid: Value x not in range 1 to 4194304");
  // CLI11's PositiveNumber/NonNegativeNumber would print a 309-digit upper bound.
  expect_usage_error("loader m.py:f --batches x", "loader: --batches: x is not a positive number");
  expect_usage_error("runs -n -1", "runs: --limit: -1 is not a number >= 0");
  expect_usage_error("runs --kind bogus", "runs: --kind: ");
  // --set: an unknown key or a bad value is a usage error before anything runs.
  expect_usage_error("run --set dataloader.workers=4 -- true", "run: --set: unknown key 'dataloader.workers' (known: ");
  expect_usage_error("run --set threads=zero -- true", "run: --set: threads: expected N >= 1, got 'zero'");
  expect_usage_error("verify --steps 5 -- true", "verify: --steps: ");
}

// Values that parse as strings but mean nothing: the same one line and exit 2 as a bad number.
TEST(UsageErrors, BadValuesOfEveryKind) {
  expect_usage_error("analyze --steps 5-2 x.json", "analyze: --steps: 5-2 is not N, A-B, A- or -B with A <= B");
  expect_usage_error("analyze --steps x x.json", "analyze: --steps: x is not N, A-B");
  expect_usage_error("run --interval 5 -- true", "run: --interval: 5 is not a duration (a number with ms or s");
  expect_usage_error("run --interval 5ms -- true", "run: --interval: 5ms is not between 10ms and 60s");
  expect_usage_error("run --profile-steps 1-3 -- true", "run: --profile-steps: 1-3: FIRST must be >= 2");
  expect_usage_error("run --profile-steps 9- -- true", "run: --profile-steps: 9- is not FIRST-LAST");
  expect_usage_error("run --steps 0 -- true", "run: --steps: 0 is not a positive number");
  expect_usage_error("run --out /tmp/x --job-dir /tmp/y -- true", "--out excludes --job-dir");
  expect_usage_error("run --node-rank -1 --job-dir /tmp/y -- true", "--node-rank");
  expect_usage_error("run", "run: command is required");
  expect_usage_error("serve --interval 10ms --once", "serve: --interval: 10ms is not between 50ms and 60s");
  expect_usage_error("serve --interval 2 --once", "serve: --interval: 2 is not a duration");
  expect_usage_error("watch --interval 1m", "watch: --interval: 1m is not a duration");
  expect_usage_error("snapshot --window 20ms", "snapshot: --window: 20ms is not between 100ms and 10s");
}

TEST(UsageErrors, MissingAndUnexpectedArguments) {
  expect_usage_error("analyze", "analyze: PATH is required");
  expect_usage_error("report", "report: run is required");
  expect_usage_error("runs extra", "runs: The following argument was not expected: extra");
  expect_usage_error("", "a command is required: analyze, doctor");
  expect_usage_error("-q", "a command is required");
  expect_usage_error("bogus", "unknown command 'bogus'");
  expect_usage_error("--bogus", "unknown option '--bogus'");
  expect_usage_error("--bogus analyze x.json", "--bogus");
}

TEST(UsageErrors, EveryCommandRejectsAnUnknownFlagInOneLine) {
  for (const char* c : {"analyze", "doctor", "serve", "lab", "loader", "max-batch", "compare", "run", "runs", "report",
                        "watch", "snapshot", "verify"})
    expect_usage_error(fmt::format("{} --not-a-flag", c), fmt::format("trainscope: {}: ", c));
}

// `--set` takes one value each time: CLI11 lets a vector option take values until `--`, which then
// only ends the option, and `run --set threads=1 -- python -c ...` failed with "-c not expected".
TEST(UsageErrors, TheCommandsOwnOptionsAfterSetAreTheCommands) {
  fs::path out = fs::temp_directory_path() / fmt::format("ts_usage_set_{}", getpid());
  Result r = run(fmt::format("run --no-store --no-profile --no-sample --no-live --out {} --set threads=1 --set "
                             "optimizer.foreach=true -- /bin/sh -c 'exit 3' -x --epochs 2",
                             out.string()));
  EXPECT_EQ(r.code, 3) << r.err;  // the command's own exit status, passed through
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  fs::remove_all(out);
  // Two values after one --set: the second is not a key, so the command would start with it.
  expect_usage_error("run --set threads=1 threads=2 -- true", "run: The following argument was not expected: true");
}

TEST(UsageErrors, HelpAndVersionStillExitZero) {
  Result r = run("analyze --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--top"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
  r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("analyze"), std::string::npos);
  r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("trainscope 0.1.0"), std::string::npos);
}

// A bad file is a UserError, not a usage error: exit 1, the file named, no "(see --help)".
TEST(UsageErrors, BadFileIsNotAUsageError) {
  Result r = run("analyze /nonexistent/trace.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/trace.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("see --help"), std::string::npos) << r.err;
}
