// `trainscope run` on a shared host (issue #18, "Security and data"): secrets on the command line
// never reach what we write, a live-status folder that is not ours is refused with one line, and
// USR1/USR2 (Slurm's pre-emption warning) go to the job instead of killing trainscope.
// The child is /bin/sh: none of this needs Python or torch.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <gtest/gtest.h>
#include <thread>

#include "run_test_util.h"

using namespace ts::run::test;
namespace fs = std::filesystem;

namespace {

// Every byte of every file under `dir` (reports, samples, the store's SQLite file).
std::string all_bytes(const std::string& dir) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += slurp(e.path().string());
  return all;
}

std::string private_tmp(const std::string& name) {
  std::string d = fresh_dir(name);
  chmod(d.c_str(), 0700);
  return d;
}

}  // namespace

TEST(LaunchSafety, SecretsAreRedactedInEveryReportStoreAndLiveFile) {
  std::string d = fresh_dir("secrets");
  std::string xdg = private_tmp("secrets-xdg");
  // The child copies the live files while the run is on (they are removed at the end).
  std::string script = "sleep 2.5; cat \"$XDG_RUNTIME_DIR\"/trainscope/live/*.json > '" + d + "/live-copy.json'";
  auto c = run_cli({"run", "--out", d + "/run", "--store", d + "/store.db", "--", "/bin/sh", "-c", script, "sh",
                    "--hf_token", "SECRET-A", "--api-key=SECRET-B", "WANDB_API_KEY=SECRET-C",
                    "https://user:SECRET-D@example.com/data", "--lr", "0.1"},
                   "", {"XDG_RUNTIME_DIR=" + xdg});
  ASSERT_EQ(c.status, 0) << c.err;
  ASSERT_TRUE(fs::exists(d + "/run/report.json"));
  ASSERT_TRUE(fs::exists(d + "/live-copy.json")) << "the live file was not there during the run";
  std::string everything = all_bytes(d) + c.out + c.err;
  size_t leak = everything.find("SECRET-");
  EXPECT_EQ(leak, std::string::npos) << "a secret reached a file or the terminal: ..."
                                     << everything.substr(leak < 80 ? 0 : leak - 80, 120);
  // What stays: the flags, the names, the ordinary arguments, in report.json, the text and the live file.
  std::string rep, pretty = slurp(d + "/run/report.json");
  for (size_t i = 0; i < pretty.size(); ++i) {  // the array without the pretty-printer's line breaks
    if (pretty[i] != '\n') rep += pretty[i];
    else while (i + 1 < pretty.size() && pretty[i + 1] == ' ') ++i;
  }
  EXPECT_NE(rep.find("\"--hf_token\",\"***\",\"--api-key=***\",\"WANDB_API_KEY=***\","
                     "\"https://user:***@example.com/data\",\"--lr\",\"0.1\""),
            std::string::npos)
      << rep.substr(rep.find("\"command\": ["), 400);
  EXPECT_NE(slurp(d + "/live-copy.json").find("--hf_token *** --api-key=*** WANDB_API_KEY=***"), std::string::npos);
  EXPECT_NE(slurp(d + "/run/report.txt").find("--hf_token ***"), std::string::npos);
  // `runs` reads the store back: redacted there too.
  auto runs = run_cli({"runs", "--store", d + "/store.db", "--json"});
  EXPECT_EQ(runs.out.find("SECRET-"), std::string::npos) << runs.out;
}

TEST(LaunchSafety, ALiveFolderThatIsNotOursIsRefusedWithOneLine) {
  // A symlink planted where our folder goes: nothing is written through it, the job runs on.
  std::string d = fresh_dir("live-link");
  std::string xdg2 = private_tmp("live-link-xdg");
  std::string target = fresh_dir("live-link-target");
  fs::create_directories(xdg2 + "/trainscope");
  chmod((xdg2 + "/trainscope").c_str(), 0700);
  fs::create_directory_symlink(target, xdg2 + "/trainscope/live");
  auto c = run_cli({"run", "--no-store", "--no-profile", "--out", d + "/run", "--", "/bin/sh", "-c", "sleep 1.5"}, "",
                   {"XDG_RUNTIME_DIR=" + xdg2});
  EXPECT_EQ(c.status, 0) << c.err;  // the job itself is never stopped by this
  EXPECT_EQ(count(c.err, "live status for `trainscope serve` off: "), 1) << c.err;
  EXPECT_NE(c.err.find("is a symbolic link"), std::string::npos) << c.err;
  EXPECT_TRUE(fs::is_empty(target));
  EXPECT_TRUE(fs::exists(d + "/run/report.json"));

  // Another user's folder (made before our first run): never adopted, even with mode 0777.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a folder owned by another uid";
  std::string xdg = private_tmp("live-theirs-xdg");
  fs::create_directories(xdg + "/trainscope/live");
  chmod((xdg + "/trainscope").c_str(), 0777);
  ASSERT_EQ(chown((xdg + "/trainscope").c_str(), 12345, 12345), 0);
  c = run_cli({"run", "--no-store", "--no-profile", "--out", d + "/run2", "--", "/bin/sh", "-c", "sleep 1.5"}, "",
              {"XDG_RUNTIME_DIR=" + xdg});
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.err.find("is owned by uid 12345, not by us"), std::string::npos) << c.err;
  EXPECT_TRUE(fs::is_empty(xdg + "/trainscope/live"));

  // Our own folder left 0755 by an earlier version: closed to 0700 and used, no refusal.
  std::string xdg3 = private_tmp("live-ours-xdg");
  fs::create_directories(xdg3 + "/trainscope/live");
  chmod((xdg3 + "/trainscope").c_str(), 0755);
  c = run_cli({"run", "--no-store", "--no-profile", "--out", d + "/run3", "--", "/bin/sh", "-c", "sleep 1.5"}, "",
              {"XDG_RUNTIME_DIR=" + xdg3});
  EXPECT_EQ(count(c.err, "live status"), 0) << c.err;
  struct stat st;
  ASSERT_EQ(lstat((xdg3 + "/trainscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(LaunchSafety, Usr1AndUsr2ReachTheJobAndTheReportIsWritten) {
  std::string d = fresh_dir("usr-signals");
  std::string log = d + "/got", ready = d + "/ready";
  // The job's handlers: USR1 is noted (a requeue hook would checkpoint here), USR2 ends it with 9.
  std::string script = "trap 'echo USR1 >> " + log + "' USR1; trap 'echo USR2 >> " + log + "; exit 9' USR2; "
                       "echo up > " + ready + "; while :; do sleep 0.05; done";
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1), dup2(null, 2);
    execl(TS_CLI, TS_CLI, "run", "--no-store", "--no-profile", "--no-sample", "--out", (d + "/run").c_str(), "--",
          "/bin/sh", "-c", script.c_str(), (char*)nullptr);
    _exit(127);
  }
  auto wait_for = [](const std::string& path, const std::string& text) {
    for (int i = 0; i < 200; ++i) {
      if (slurp(path).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  ASSERT_TRUE(wait_for(ready, "up")) << "the job never started";
  kill(pid, SIGUSR1);  // as `scancel --signal=USR1` or sbatch --signal would send it to trainscope
  ASSERT_TRUE(wait_for(log, "USR1")) << "USR1 did not reach the job";
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "trainscope died of USR1";
  kill(pid, SIGUSR2);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "trainscope was killed by signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 9);  // the job's own exit status passes through
  EXPECT_EQ(slurp(log), "USR1\nUSR2\n");
  std::string rep = slurp(d + "/run/report.json");
  EXPECT_NE(rep.find("\"code\": 9"), std::string::npos) << rep.substr(0, 400);
}
