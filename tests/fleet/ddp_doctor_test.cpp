// `trainscope doctor --pid` on a live torchrun job (2 gloo CPU ranks): the launcher's process
// tree is found from /proc, every process's threads are measured for oversubscription, and each
// rank's own environment (OMP_NUM_THREADS=1, set by torchrun for nproc_per_node > 1) is read
// from its /proc/PID/environ, not the doctor's. The job is bounded (timeout 120) and killed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <simdjson.h>
#include <sstream>
#include <string>
#include <thread>

#include "support/shell.h"

using ts::test::read_file;
using ts::test::run_cmd;

TEST(DdpDoctor, PidOfATorchrunLauncherSeesBothRanks) {
  char tmpl[] = "/tmp/ts_fleet_doc_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  int port = 29900 + getpid() % 90;
  pid_t job = fork();
  if (job == 0) {
    setpgid(0, 0);  // its own group: the whole job is killed together at the end
    std::string p = std::to_string(port);
    execl("/usr/bin/timeout", "timeout", "120", "/usr/bin/python3", "-m", "torch.distributed.run",
          "--nproc_per_node=2", "--master_port", p.c_str(), "--redirects", "0:1,1:1", "--tee", "0:1,1:1",
          TS_SOURCE_DIR "/examples/ddp/train_ddp_gloo.py", "--steps", "100000", nullptr);
    _exit(127);
  }
  // Wait until both ranks are training: two python descendants with torch/_C mapped.
  std::string launcher;
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // timeout -> python (torchrun launcher) -> 2 ranks
    std::string kids = run_cmd("pgrep -P " + std::to_string(job));
    if (kids.empty()) continue;
    launcher = kids.substr(0, kids.find('\n'));
    std::string ranks = run_cmd("pgrep -P " + launcher);
    int with_torch = 0;
    for (std::istringstream in(ranks); std::getline(in, kids);)
      if (read_file("/proc/" + kids + "/maps").find("torch/_C") != std::string::npos) ++with_torch;
    if (with_torch == 2) break;
    launcher.clear();
  }
  std::string out;
  if (!launcher.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // past init_process_group: steps running
    out = run_cmd(std::string(TS_CLI) + " -q doctor --json --pid " + launcher + " 2>/dev/null");
  }
  killpg(job, SIGKILL);  // the whole job, whatever happened above
  waitpid(job, nullptr, 0);
  std::system(("rm -rf " + dir).c_str());
  ASSERT_FALSE(launcher.empty()) << "the ranks did not start";

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  bool found = false;
  for (auto c : simdjson::dom::array(doc["checks"])) {
    if (std::string_view(c["id"]) != "thread-budget") continue;
    found = true;
    int rank_omp_one = 0;
    std::string processes;
    for (auto e : simdjson::dom::array(c["evidence"])) {
      std::string_view name = e["name"], value = e["value"];
      if (name == "processes measured") processes = std::string(value);
      // Each rank's own environment, read from /proc: torchrun set OMP_NUM_THREADS=1 there.
      if (name.substr(0, 4) == "pid " && value.find("OMP_NUM_THREADS=1") != std::string_view::npos) ++rank_omp_one;
    }
    EXPECT_EQ(processes, "3");  // the launcher and two ranks
    EXPECT_EQ(rank_omp_one, 2) << out;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(std::string_view(doc["python"]["torch_version"]).substr(0, 5), "1.13.");
}
