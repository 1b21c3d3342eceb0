// Thread oversubscription measured live by `trainscope run` across a torchrun job's ranks:
// 2 gloo CPU ranks on two cores (tests/fleet/scripts/ddp_conv_threads.py, whose
// convolutions run on oneDNN with every intra-op thread). With --threads 8 each rank keeps up to
// 8 threads wanting a core in its parallel regions: oversubscribed, and the finding says so with
// the live numbers. With torchrun's default (OMP_NUM_THREADS=1) one busy thread per rank: not
// oversubscribed, no finding.
// Why 8, not 4: only part of a step is parallel (the convolutions; not the optimizer or gloo's
// allreduce), so the job's mean is well under 2 x threads. With 4, ten runs here measured 3.3-4.5
// threads wanting a core, and CI's host measured 2.2 once, under the rule's 2.5 (1.25 x 2 cores).
// With 8, five runs here measured 5.7-6.9: an outcome that a slower host's mix cannot flip.
// Each TEST is one real job (ctest runs every test in its own process), pinned to two of this
// host's cores (taskset): on a 16-core host 2 x 8 threads would not be oversubscribed, and the
// tests are about two cores, whatever the host has.
// (examples/ddp/train_ddp_gloo.py is an MLP: Debian's torch multiplies matrices with the
// single-threaded reference BLAS, so its --threads 4 leaves the extra threads asleep; the live
// measure rightly does not call that oversubscribed, so it is not the job used here.)
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <simdjson.h>
#include <sstream>
#include <string>

#include "support/shell.h"
#include "support/torch_python.h"

using ts::test::read_file;

namespace {

struct Job {
  int status = -1;
  std::string dir, report, text;
};

// The first two cores this process may run on, as taskset's list ("0,1"); empty when it has one.
std::string two_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "";
  std::string list;
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; ++c)
    if (CPU_ISSET(c, &set)) list += (n++ ? "," : "") + std::to_string(c);
  return n == 2 ? list : "";
}

Job run_job(const std::string& name, const std::string& extra) {
  Job j;
  const std::string cores = two_cores();
  if (cores.empty()) {
    ADD_FAILURE() << "the tests need two cores to pin the job to; sched_getaffinity gave fewer";
    return j;
  }
  char tmpl[] = "/tmp/ts_oversub_XXXXXX";
  j.dir = mkdtemp(tmpl);
  int port = 29300 + (getpid() + static_cast<int>(name.size())) % 250;
  std::string cmd = "timeout 300 taskset -c " + cores + " " + std::string(TS_CLI) + " run --out " + j.dir +
                    "/out --no-store --no-profile -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 "
                    "--master_port " + std::to_string(port) +
                    " " TS_SOURCE_DIR "/tests/fleet/scripts/ddp_conv_threads.py " + extra + " > " + j.dir +
                    "/stdout.txt 2> " + j.dir + "/stderr.txt";
  int st = std::system(cmd.c_str());
  j.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  j.report = read_file(j.dir + "/out/report.json");
  j.text = read_file(j.dir + "/out/report.txt");
  return j;
}


struct Parsed {
  bool oversubscribed = false;
  double runnable = -1, window_s = 0;
  int64_t budget = 0, processes = 0, samples = 0;
  std::set<int64_t> ranks, pids;
  std::set<std::string> omp;
  bool finding = false;
  std::string finding_title;
};

Parsed parse(const std::string& report) {
  Parsed p;
  simdjson::dom::parser parser;
  simdjson::dom::element d;
  EXPECT_EQ(parser.parse(report).get(d), simdjson::SUCCESS) << report.substr(0, 200);
  simdjson::dom::element o;
  EXPECT_EQ(d["host"]["oversubscription"].get(o), simdjson::SUCCESS) << "no live measure in report.json";
  if (o.is_object()) {
    p.oversubscribed = bool(o["oversubscribed"]);
    p.runnable = double(o["runnable_threads_mean"]);
    p.window_s = double(o["window_s"]);
    p.budget = int64_t(o["cpu_budget"]);
    p.processes = int64_t(o["processes"]);
    p.samples = int64_t(o["samples"]);
    for (auto l : simdjson::dom::array(o["per_process"])) {
      p.ranks.insert(int64_t(l["rank"]));
      p.pids.insert(int64_t(l["pid"]));
      std::string_view v;
      if (l["omp_num_threads"].get_string().get(v) == simdjson::SUCCESS) p.omp.insert(std::string(v));
    }
  }
  for (auto f : simdjson::dom::array(d["findings"])) {
    if (std::string_view(f["id"]) == "thread-oversubscription") {
      p.finding = true;
      p.finding_title = std::string(std::string_view(f["title"]));
    }
  }
  return p;
}

TEST(LiveOversubscription, EightThreadsPerRankOnTwoCores) {
  if (!ts::test::system_python_has_torch()) GTEST_FAIL() << "/usr/bin/python3 has no torch.distributed";
  // 40 steps: oversubscribed steps are slower, and 40 still outlast the 1 s live window.
  Job j = run_job("threads8", "--steps 40 --threads 8");
  ASSERT_EQ(j.status, 0) << read_file(j.dir + "/stderr.txt");
  Parsed p = parse(j.report);
  // Both ranks (not the torchrun launcher) measured, each with torchrun's OMP_NUM_THREADS=1.
  EXPECT_EQ(p.processes, 2);
  EXPECT_EQ(p.ranks, (std::set<int64_t>{0, 1}));
  EXPECT_EQ(p.omp, (std::set<std::string>{"1"}));
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(p.budget, 1);
  EXPECT_LE(p.budget, std::min(2, CPU_COUNT(&set)));  // the job's affinity, or a tighter cgroup quota
  EXPECT_GE(p.samples, 10) << "the measure ended early: the job was shorter than expected";
  // 2 ranks x 8 intra-op threads in the parallel regions: well above 1.25 x 2 cores.
  EXPECT_GT(p.runnable, 2.5);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_TRUE(p.finding) << j.text;
  EXPECT_NE(p.finding_title.find("2 processes"), std::string::npos) << p.finding_title;
  EXPECT_NE(j.text.find("oversubscribed"), std::string::npos) << j.text;
  EXPECT_NE(j.text.find("(rank 1)"), std::string::npos) << j.text;
  std::system(("rm -rf " + j.dir).c_str());
}

TEST(LiveOversubscription, TorchrunDefaultIsNotOversubscribed) {
  if (!ts::test::system_python_has_torch()) GTEST_FAIL() << "/usr/bin/python3 has no torch.distributed";
  Job j = run_job("default", "--steps 60");
  ASSERT_EQ(j.status, 0) << read_file(j.dir + "/stderr.txt");
  Parsed p = parse(j.report);
  EXPECT_EQ(p.processes, 2);
  EXPECT_EQ(p.ranks, (std::set<int64_t>{0, 1}));
  EXPECT_GE(p.samples, 10);
  // One busy intra-op thread per rank (gloo's threads mostly sleep).
  EXPECT_LE(p.runnable, 2.5);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_FALSE(p.finding) << p.finding_title;
  std::system(("rm -rf " + j.dir).c_str());
}

}  // namespace
