// `trainscope run -- python -m torch.distributed.run --nproc_per_node=2 train_ddp_gloo.py`:
// two real CPU ranks (gloo) with the agent injected in each; rank 1 is made a straggler (a
// sleep in its collate). Each rank writes its own measured step times (--report-dir), so the
// numbers in trainscope's report are checked against an independent measurement of the same
// run. One run serves every test of the suite (ctest runs each test in its own process, so
// they are few: the job takes ~15-60 s on a loaded 2-core VM). The run uses torchrun's defaults
// (no --redirects/--tee: on Python 3.11 + torch 1.13 those crash torchrun unless the agent's
// Std.from_str fix is in), profiles steps 3-5 on every rank, and writes its live status into a
// private XDG_RUNTIME_DIR, which `trainscope serve --once` reads while the job runs.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <simdjson.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/shell.h"

using ts::test::read_file;
using ts::test::run_cmd;

namespace {

struct RankOwn {
  int rank = -1, pid = -1, steps = 0;
  double median_step_ms = 0, median_wait_ms = 0;
  std::string omp_num_threads;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> list_json(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n[0] != '.' && n.ends_with(".json")) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class DdpRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/ts_fleet_XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string xdg = dir_ + "/xdg";
    mkdir(xdg.c_str(), 0700);
    live_dir_ = xdg + "/trainscope/live";
    // A master port of our own: concurrent test runs must not collide on 29500.
    int port = 29600 + getpid() % 300;
    std::string cmd = "exec timeout 300 " + std::string(TS_CLI) + " -q run --out " + dir_ +
                      "/out --no-store --profile-steps 3-5 -- /usr/bin/python3 -m torch.distributed.run "
                      "--nproc_per_node=2 --master_port " + std::to_string(port) +
                      " " TS_SOURCE_DIR "/examples/ddp/train_ddp_gloo.py --steps 20 --straggler-rank 1 "
                      "--straggler-ms 60 --report-dir " + dir_ + "/own > " + dir_ + "/stdout.txt 2> " + dir_ +
                      "/stderr.txt";
    pid_t pid = fork();
    if (pid == 0) {
      setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    // While the job runs: the live-status files, and serve's view of them once both ranks are in.
    int st = 0;
    for (;;) {
      pid_t r = waitpid(pid, &st, WNOHANG);
      if (r == pid) break;
      for (const auto& n : list_json(live_dir_)) live_names_.insert(n);
      if (serve_text_.empty() && live_names_.size() >= 2) {
        std::string text = run_cmd(std::string(TS_CLI) + " serve --once --interval 50ms --live-dir " + live_dir_ +
                                   " 2>/dev/null");
        if (text.find("trainscope_training_steps_total{") != std::string::npos &&
            text.find("rank=\"1\"") != std::string::npos && text.find("rank=\"0\"") != std::string::npos)
          serve_text_ = text;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    live_left_ = list_json(live_dir_);
    report_ = read_file(dir_ + "/out/report.json");
    for (int r = 0; r < 2; ++r) {
      std::string text = read_file(dir_ + "/own/rank" + std::to_string(r) + ".json");
      simdjson::dom::parser p;
      simdjson::dom::element d;
      if (p.parse(text).get(d) != simdjson::SUCCESS) continue;
      RankOwn o;
      o.rank = static_cast<int>(int64_t(d["rank"]));
      o.pid = static_cast<int>(int64_t(d["pid"]));
      o.steps = static_cast<int>(int64_t(d["steps"]));
      std::vector<double> step, wait;
      for (double v : simdjson::dom::array(d["step_s"])) step.push_back(v * 1000);
      for (double v : simdjson::dom::array(d["data_wait_s"])) wait.push_back(v * 1000);
      // Same warm-up the run layer drops (docs: 2 steps when >= 10).
      if (step.size() > 2) step.erase(step.begin(), step.begin() + 2), wait.erase(wait.begin(), wait.begin() + 2);
      o.median_step_ms = median(step);
      o.median_wait_ms = median(wait);
      std::string_view omp;
      if (d["omp_num_threads"].get_string().get(omp) == simdjson::SUCCESS) o.omp_num_threads = std::string(omp);
      own_.push_back(o);
    }
  }
  static void TearDownTestSuite() { std::system(("rm -rf " + dir_).c_str()); }

  const RankOwn* own(int rank) const {
    for (const auto& o : own_)
      if (o.rank == rank) return &o;
    return nullptr;
  }

  static std::string dir_, report_, live_dir_, serve_text_;
  static int status_;
  static std::vector<RankOwn> own_;
  static std::set<std::string> live_names_;
  static std::vector<std::string> live_left_;
};
std::string DdpRun::dir_, DdpRun::report_, DdpRun::live_dir_, DdpRun::serve_text_;
int DdpRun::status_ = -1;
std::vector<RankOwn> DdpRun::own_;
std::set<std::string> DdpRun::live_names_;
std::vector<std::string> DdpRun::live_left_;

}  // namespace

TEST_F(DdpRun, TorchrunDefaultsWorkOnPython311) {
  // No --redirects/--tee: torchrun's default "0" goes through Std.from_str, which returns None on
  // Python 3.11 + torch 1.13 and crashes the launcher unless the agent fixed it.
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  EXPECT_EQ(read_file(dir_ + "/stderr.txt").find("NoneType"), std::string::npos);
  EXPECT_NE(read_file(dir_ + "/stdout.txt").find("ddp: 2 ranks x 20 steps done"), std::string::npos);
  EXPECT_NE(report_.find("patched Std.from_str"), std::string::npos);
}

TEST_F(DdpRun, BothRanksTrainAndRankZeroIsReportedWithItsOwnNumbers) {
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  ASSERT_EQ(own_.size(), 2u);
  for (const auto& o : own_) {
    EXPECT_EQ(o.steps, 20) << "rank " << o.rank;
    // torchrun's default for nproc_per_node > 1 reached every rank (torch.distributed.run sets
    // OMP_NUM_THREADS=1 when it is unset and more than one process runs per node).
    EXPECT_EQ(o.omp_num_threads, "1");
  }
  EXPECT_NE(own_[0].pid, own_[1].pid);
  // The straggler really straggles, by its own clock: its collate sleeps 60 ms.
  EXPECT_GT(own_[1].median_wait_ms, 55.0);
  EXPECT_LT(own_[0].median_wait_ms, own_[1].median_wait_ms / 5);

  simdjson::dom::parser p;
  simdjson::dom::element r;
  ASSERT_EQ(p.parse(report_).get(r), simdjson::SUCCESS) << report_.substr(0, 500);
  simdjson::dom::element agent = r["run"]["agent"];
  EXPECT_TRUE(bool(agent["loaded"]));
  EXPECT_EQ(int64_t(agent["steps"]), 20);
  // The process trainscope summarises is rank 0 (by RANK from torchrun), with rank 0's pid.
  EXPECT_EQ(int64_t(agent["settings"]["rank"]), 0);
  EXPECT_EQ(int64_t(agent["settings"]["world_size"]), 2);
  EXPECT_TRUE(bool(agent["settings"]["ddp"]));
  const RankOwn* r0 = own(0);
  ASSERT_NE(r0, nullptr);
  EXPECT_EQ(int64_t(agent["pid"]), r0->pid);
  // Its median step time matches rank 0's own measurement of the same steps.
  double step_ms = double(agent["summary"]["step_ms"]);
  EXPECT_NEAR(step_ms, r0->median_step_ms, 0.15 * r0->median_step_ms) << "agent " << step_ms << " own " << r0->median_step_ms;
  // Rank 0 does not wait for data; it waits for rank 1 inside backward (DDP's all-reduce), so
  // backward dominates its step.
  // (Against the straggler's 60 ms collate sleep, not a fixed number of milliseconds.)
  ASSERT_NE(own(1), nullptr);
  EXPECT_LT(double(agent["summary"]["data_wait_ms"]), own(1)->median_wait_ms / 5);
  EXPECT_GT(double(agent["summary"]["backward_ms"]), double(agent["summary"]["forward_ms"]));
}

TEST_F(DdpRun, PerRankTableNamesRankOneTheStraggler) {
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  ASSERT_EQ(own_.size(), 2u);
  simdjson::dom::parser p;
  simdjson::dom::element r;
  ASSERT_EQ(p.parse(report_).get(r), simdjson::SUCCESS);
  simdjson::dom::array ranks;
  ASSERT_EQ(r["ranks"].get_array().get(ranks), simdjson::SUCCESS);
  ASSERT_EQ(ranks.size(), 2u);
  std::set<int64_t> seen;
  int64_t straggler = -1, stragglers = 0;
  double wait0 = -1, busy0 = -1, busy1 = -1;
  for (auto line : ranks) {
    int64_t rank = int64_t(line["rank"]);
    seen.insert(rank);
    const RankOwn* o = own(static_cast<int>(rank));
    ASSERT_NE(o, nullptr) << "rank " << rank;
    EXPECT_EQ(int64_t(line["steps"]), 20) << "rank " << rank;
    EXPECT_GT(double(line["rss_max_bytes"]), 50e6) << "rank " << rank;  // a Python with torch loaded
    EXPECT_EQ(int64_t(line["local_rank"]), rank);  // one node: local rank = rank
    // The pid is the rank's own (what the training script itself reported).
    EXPECT_EQ(int64_t(line["pid"]), o->pid) << "rank " << rank;
    // Each rank's step time against its own measurement (ranks are not merged into one median).
    EXPECT_NEAR(double(line["step_ms"]), o->median_step_ms, 0.15 * o->median_step_ms) << "rank " << rank;
    if (rank == 1) {
      // The straggler's data wait: within 20% of its own clock's (the 60 ms collate sleep).
      EXPECT_NEAR(double(line["data_wait_ms"]), o->median_wait_ms, 0.2 * o->median_wait_ms);
      busy1 = double(line["busy_ms"]);
      EXPECT_NEAR(double(line["wait_ms"]), 0.0, 1e-9);
    } else {
      wait0 = double(line["wait_ms"]);
      busy0 = double(line["busy_ms"]);
    }
    if (bool(line["straggler"])) straggler = rank, ++stragglers;
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1}));
  EXPECT_EQ(straggler, 1);
  EXPECT_EQ(stragglers, 1);
  EXPECT_GT(busy1, 1.10 * (busy0 + busy1) / 2);
  // Rank 0 waits in the all-reduce for about what rank 1 spends extra on its data (by their own
  // clocks): within 25%.
  double extra = own(1)->median_wait_ms - own(0)->median_wait_ms;
  EXPECT_NEAR(wait0, extra, 0.25 * extra) << "rank 0 waits " << wait0 << " ms; rank 1's extra data wait " << extra;
}

TEST_F(DdpRun, StragglerFindingInTheDiagnosis) {
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  simdjson::dom::parser p;
  simdjson::dom::element r;
  ASSERT_EQ(p.parse(report_).get(r), simdjson::SUCCESS);
  bool found = false;
  for (auto f : simdjson::dom::array(r["findings"])) {
    if (std::string_view(f["id"]) != "straggler-rank") continue;
    found = true;
    EXPECT_EQ(std::string_view(f["source"]), "agent");
    double rank = -1, wait = -1;
    for (auto e : simdjson::dom::array(f["evidence"])) {
      if (std::string_view(e["name"]) == "straggler_rank") rank = double(e["value"]);
      if (std::string_view(e["name"]) == "others_wait_ms_per_step") wait = double(e["value"]);
    }
    EXPECT_EQ(rank, 1);
    EXPECT_GT(wait, 30);
    // Rank 1's extra time is its data wait: the fix says so.
    EXPECT_NE(std::string_view(f["fix"]).find("DataLoader"), std::string_view::npos);
  }
  EXPECT_TRUE(found) << "no straggler-rank finding";
  // The text report shows the per-rank table.
  std::string txt = read_file(dir_ + "/out/report.txt");
  EXPECT_NE(txt.find("Ranks (2 ranks"), std::string::npos);
  EXPECT_NE(txt.find("* straggler: rank 1"), std::string::npos);
}

TEST_F(DdpRun, EveryRankWritesItsProfilerTrace) {
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  for (int rank = 0; rank < 2; ++rank) {
    std::string path = dir_ + "/out/trace_rank" + std::to_string(rank) + ".pt.trace.json";
    std::string text = read_file(path);
    ASSERT_FALSE(text.empty()) << path;
    // The window covers steps 3-5 on every rank.
    for (int step = 3; step <= 5; ++step)
      EXPECT_NE(text.find("ProfilerStep#" + std::to_string(step)), std::string::npos) << path << " step " << step;
  }
  EXPECT_FALSE(std::ifstream(dir_ + "/out/trace.json").good());  // ranks never write the single-process name
  simdjson::dom::parser p;
  simdjson::dom::element r;
  ASSERT_EQ(p.parse(report_).get(r), simdjson::SUCCESS);
  EXPECT_EQ(simdjson::dom::array(r["run"]["rank_traces"]).size(), 2u);
  EXPECT_NE(std::string_view(r["run"]["trace"]).find("trace_rank0.pt.trace.json"), std::string_view::npos);
  // `trainscope analyze OUT` reads the two traces (not report.json) and finds the same straggler.
  std::string json = run_cmd(std::string(TS_CLI) + " -q analyze --json " + dir_ + "/out 2>&1");
  simdjson::dom::element a;
  ASSERT_EQ(p.parse(json).get(a), simdjson::SUCCESS) << json.substr(0, 300);
  EXPECT_EQ(simdjson::dom::array(a["traces"]).size(), 2u);
  int64_t straggler = -1;
  for (auto line : simdjson::dom::array(a["ranks"]))
    if (bool(line["straggler"])) straggler = int64_t(line["rank"]);
  EXPECT_EQ(straggler, 1);
  bool finding = false;
  for (auto f : simdjson::dom::array(a["findings"])) finding = finding || std::string_view(f["id"]) == "straggler-rank";
  EXPECT_TRUE(finding);
}

TEST_F(DdpRun, LiveStatusOneFilePerRankForServe) {
  ASSERT_EQ(status_, 0) << read_file(dir_ + "/stderr.txt");
  // <trainscope pid>-r0.json and -r1.json while the job ran, and nothing left once it ended.
  int r0 = 0, r1 = 0;
  for (const auto& n : live_names_) {
    r0 += n.ends_with("-r0.json");
    r1 += n.ends_with("-r1.json");
  }
  EXPECT_EQ(r0, 1);
  EXPECT_EQ(r1, 1);
  EXPECT_TRUE(live_left_.empty());
  // Serve exported both ranks with a rank label, each with the rank's own pid.
  ASSERT_FALSE(serve_text_.empty()) << "serve never showed both ranks";
  for (const auto& o : own_)
    EXPECT_NE(serve_text_.find("trainscope_training_steps_total{pid=\"" + std::to_string(o.pid) + "\",rank=\"" +
                               std::to_string(o.rank) + "\""),
              std::string::npos)
        << serve_text_.substr(0, 2000);
}
