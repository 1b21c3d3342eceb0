// `trainscope serve` beside a live `trainscope run`: the run writes its live-status file (the
// run layer's side of the hand-off), serve exports it. A data-starved loop (2 ms sleep per
// sample, 16 samples per batch) must show up with its steps counting and most of each step
// spent waiting on data; samples/s must agree with the mean step time it reports. Bounded:
// the run stops itself after 400 steps, and is killed at the end in any case. While it runs,
// the rules see what is known so far: serve's top-finding info metric names the starvation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "support/shell.h"

using ts::test::run_cmd;

namespace {

// Values of trainscope_training_* series whose labels carry pid="<pid>".
std::map<std::string, double> training_values(const std::string& text, int pid) {
  std::map<std::string, double> out;
  std::regex line("^(trainscope_training_[a-z_]+)\\{[^}]*pid=\"" + std::to_string(pid) + "\"[^}]*\\} ([0-9.e+-]+)$");
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    std::smatch m;
    if (std::regex_match(l, m, line) && l.find("le=\"") == std::string::npos) out[m[1]] = std::stod(m[2]);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

TEST(LiveServe, ServeExportsARunningTrainscopeRun) {
  char tmpl[] = "/tmp/ts_fleet_live_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/starved.py") << R"(import time, torch
from torch.utils.data import DataLoader, Dataset
class D(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(64), torch.tensor(i % 10)
m = torch.nn.Linear(64, 10); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for x, y in DataLoader(D(), batch_size=16):
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
)";
  pid_t run = fork();
  if (run == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::string out = dir + "/out", script = dir + "/starved.py";
    execl(TS_CLI, TS_CLI, "-q", "run", "--out", out.c_str(), "--no-store", "--no-profile", "--steps", "400", "--",
          "/usr/bin/python3", script.c_str(), nullptr);
    _exit(127);
  }
  // The training process is the run's child: its pid is the `pid` label.
  int child = -1;
  std::map<std::string, double> v;
  std::string top_id;  // the id label of the top-finding info series
  for (int i = 0; i < 120 && (v.empty() || v["trainscope_training_steps_total"] < 20 || top_id.empty()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (child < 0) {
      std::string kids = run_cmd("pgrep -P " + std::to_string(run));
      if (!kids.empty()) child = std::stoi(kids);
    }
    if (child <= 0) continue;
    std::string text = run_cmd(std::string(TS_CLI) + " serve --once --interval 50ms 2>/dev/null");
    v = training_values(text, child);
    std::smatch m;
    std::regex info("trainscope_training_top_finding_info\\{[^}]*pid=\"" + std::to_string(child) +
                    "\"[^}]*\\bid=\"([a-z0-9-]+)\"");
    if (std::regex_search(text, m, info)) top_id = m[1];
  }
  kill(run, SIGINT);
  waitpid(run, nullptr, 0);
  std::system(("rm -rf " + dir).c_str());

  ASSERT_GT(child, 0);
  ASSERT_FALSE(v.empty()) << "no training series for pid " << child;
  EXPECT_GE(v["trainscope_training_steps_total"], 20);
  EXPECT_EQ(v["trainscope_training_step_duration_seconds_count"], v["trainscope_training_steps_total"]);
  // 16 samples x 2 ms of sleep per batch against a tiny Linear: the wait is most of the step.
  EXPECT_GT(v["trainscope_training_data_wait_ratio"], 0.5);
  // Throughput and mean step time come from the same window: 16 samples per step.
  ASSERT_GT(v["trainscope_training_step_time_mean_seconds"], 0);
  EXPECT_NEAR(v["trainscope_training_samples_per_second"] * v["trainscope_training_step_time_mean_seconds"], 16.0, 1.6);
  // A step cannot be faster than its 32 ms of sleep.
  EXPECT_GT(v["trainscope_training_step_time_mean_seconds"], 0.032);
  // The rules ran on what the run knew so far: the current top finding is the starvation.
  EXPECT_EQ(top_id, "dataloader-starvation");
  EXPECT_GT(v["trainscope_training_top_finding_gain_ratio"], 0.5);
}
