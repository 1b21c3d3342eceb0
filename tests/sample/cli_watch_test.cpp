// `trainscope watch` and `trainscope snapshot` as a user runs them: without a terminal (plain
// lines), in a real terminal through tmux (send-keys, capture-pane), with and without a
// driver. GPUs come from the NVML injection library, a stand-in for the NVIDIA driver.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "store/store.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Env {
  fs::path dir;
  Env() {
    char t[] = "/tmp/ts_cliwatch_XXXXXX";
    dir = mkdtemp(t);
    std::ofstream(dir / "inject.txt") << "gpus 2\n"
                                         "all name NVIDIA H100 80GB HBM3\n"
                                         "gpu 0 util 97\ngpu 0 gpm 1\ngpu 0 gpm_sm 63\ngpu 0 gpm_tensor 41\n"
                                         "gpu 0 temp 71\ngpu 0 power_mw 512000\ngpu 0 reasons 0x4\n"
                                         "gpu 0 sample_period_us 20000\ngpu 0 samples_per_call 10\n"
                                         "gpu 0 driver_util 100 100 100 100 0 0 0\n"
                                         "gpu 1 util 5\n";
  }
  ~Env() { fs::remove_all(dir); }
  std::string inject_env() const {
    return "TRAINSCOPE_NVML_LIBRARY=" TS_NVML_INJECT " NVML_INJECT_SCRIPT=" + (dir / "inject.txt").string() + " ";
  }
  Result run(const std::string& env, const std::string& args) const {
    Result r;
    std::string cmd = "env " + env + " TRAINSCOPE_HOME=" + (dir / "home").string() + " " TS_CLI " " + args +
                      " </dev/null >" + (dir / "out").string() + " 2>" + (dir / "err").string();
    int st = std::system(cmd.c_str());
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(dir / "out");
    r.err = slurp(dir / "err");
    return r;
  }
};

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool have_real_driver() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST(CliWatch, PlainLinesWithoutTerminalRecordedByDefault) {
  Env e;
  Result r = e.run(e.inject_env(), "watch --interval 100ms --duration 1.5 --pid " + std::to_string(getpid()) +
                                       " --csv " + (e.dir / "w.csv").string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(count_lines(r.out), 8);  // ~15 ticks in 1.5 s, allow a loaded machine
  EXPECT_NE(r.out.find("gpu0 97% sm 63% tensor 41%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[sw_power_cap]"), std::string::npos);
  EXPECT_NE(r.out.find("gpu1 5%"), std::string::npos);
  EXPECT_NE(r.out.find("| tree "), std::string::npos);
  EXPECT_NE(r.err.find("recording to " + (e.dir / "home" / "trainscope.db").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GPU 0: sawtooth 140 ms, GPU idle 43%: the GPU waits for data"), std::string::npos) << r.err;
  // The default store holds the finished run with both GPUs' samples.
  ts::store::Store s((e.dir / "home" / "trainscope.db").string());
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].kind, "watch");
  EXPECT_EQ(runs[0].exit_code, 0);
  EXPECT_GT(runs[0].finished_unix, runs[0].started_unix);
  EXPECT_EQ(runs[0].gpu_samples, 2 * runs[0].host_samples);
  EXPECT_EQ(s.devices(runs[0].id).size(), 2u);
  std::string csv = slurp(e.dir / "w.csv");
  EXPECT_EQ(csv.rfind("timestamp,gpu_idx,util_pct,mem_used_mib,mem_total_mib,temp_c,power_w,", 0), 0u);
  EXPECT_EQ(count_lines(csv), 1 + 2 * runs[0].host_samples);
}

TEST(CliWatch, NoDriverOneClearLineAndHostStillWorks) {
  if (have_real_driver()) GTEST_SKIP() << "a real NVIDIA driver is installed here";
  Env e;
  Result r = e.run("", "watch --no-record --interval 100ms --duration 0.6");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "trainscope: no NVIDIA driver found (libnvidia-ml.so.1 not loadable); showing the host only\n");
  EXPECT_NE(r.out.find("no-gpu | cpu "), std::string::npos);
  Result s = e.run("", "snapshot");
  ASSERT_EQ(s.rc, 0);
  EXPECT_EQ(s.out.rfind("GPUs: no NVIDIA driver found (libnvidia-ml.so.1 not loadable)\nHost: ", 0), 0u) << s.out;
}

TEST(CliWatch, JsonLines) {
  Env e;
  Result r = e.run(e.inject_env(), "watch --json --no-record --interval 100ms --duration 0.8");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream in(r.out);
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    EXPECT_NE(line.find("\"util_pct\":97"), std::string::npos) << line;
  }
  EXPECT_GE(n, 4);
}

TEST(CliWatch, BadArgumentsAreOneLine) {
  Env e;
  // Bad values are usage errors: exit 2, one line ending "(see --help)".
  Result r = e.run("", "watch --interval 5ms --duration 1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "trainscope: watch: --interval: 5ms is not between 10ms and 60s (see --help)\n");
  r = e.run("", "watch --interval fast");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "trainscope: watch: --interval: fast is not a duration (a number with ms or s: 500ms, 0.5s) (see --help)\n");
  r = e.run("", "watch --pid 99999999 --duration 1");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.err, "trainscope: --pid 99999999: no such process\n");
  std::ofstream(e.dir / "junk.db") << std::string(200, 'x');
  r = e.run("", "watch --duration 1 --record " + (e.dir / "junk.db").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.err.rfind("trainscope: " + (e.dir / "junk.db").string() + ": ", 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

TEST(CliSnapshot, JsonWithInjectedGpus) {
  Env e;
  Result r = e.run(e.inject_env(), "snapshot --json --pid " + std::to_string(getpid()));
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* want : {"\"available\": true", "\"driver_version\": \"550.54.15\"", "\"name\": \"NVIDIA H100 80GB HBM3\"",
                           "\"util_pct\": 97", "\"sm_active_pct\": 63", "\"tensor_active_pct\": 41", "\"temp_c\": 71",
                           "\"power_w\": 512", "\"names\": \"sw_power_cap\"", "\"slowdown\": true",
                           "\"pcie_tx_bytes_per_s\": 1024000", "\"cpu_cores_usable\": ", "\"processes\": [",
                           "\"pid\": " }) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  Result t = e.run(e.inject_env(), "snapshot");
  ASSERT_EQ(t.rc, 0);
  EXPECT_NE(t.out.find("NVIDIA driver 550.54.15, 2 GPUs"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("SM active 63%  tensor 41%"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("clock events: sw_power_cap"), std::string::npos) << t.out;
}

// The full-screen view in a real terminal: tmux runs it, send-keys types, capture-pane reads.
TEST(CliWatch, TerminalViewThroughTmux) {
  if (std::system("command -v tmux >/dev/null 2>&1") != 0) GTEST_FAIL() << "tmux not installed";
  Env e;
  const std::string sock = "ts_watch_test_" + std::to_string(getpid());
  const std::string tmux = "tmux -L " + sock + " ";
  const std::string cmd = "env " + e.inject_env() + " LANG=C.UTF-8 " TS_CLI " watch --no-record --interval 100ms --pid " +
                          std::to_string(getpid()) + "; echo EXITED $?; sleep 30";
  ASSERT_EQ(std::system((tmux + "new-session -d -s w -x 140 -y 45 '" + cmd + "'").c_str()), 0);
  auto capture = [&] {
    std::system((tmux + "capture-pane -p -t w > " + (e.dir / "screen").string()).c_str());
    return slurp(e.dir / "screen");
  };
  auto wait_for = [&](const std::string& what) {
    for (int i = 0; i < 100; ++i) {
      std::string s = capture();
      if (s.find(what) != std::string::npos) return s;
      std::this_thread::sleep_for(100ms);
    }
    return capture();
  };
  std::string screen = wait_for("pattern: sawtooth");
  EXPECT_NE(screen.find("trainscope watch  every 100 ms"), std::string::npos) << screen;
  EXPECT_NE(screen.find("GPU 0 NVIDIA H100 80GB HBM3"), std::string::npos) << screen;
  EXPECT_NE(screen.find("THROTTLED: sw_power_cap"), std::string::npos) << screen;
  EXPECT_NE(screen.find("pattern: sawtooth 140 ms, GPU idle 43%: the GPU waits for data"), std::string::npos) << screen;
  EXPECT_NE(screen.find(" 97%"), std::string::npos) << screen;
  EXPECT_NE(screen.find("CPU "), std::string::npos) << screen;
  EXPECT_NE(screen.find("Processes under " + std::to_string(getpid())), std::string::npos) << screen;
  EXPECT_NE(screen.find("q quit  p pause  s sort:cpu"), std::string::npos) << screen;

  std::system((tmux + "send-keys -t w s").c_str());
  screen = wait_for("s sort:rss");
  EXPECT_NE(screen.find("s sort:rss"), std::string::npos) << screen;
  std::system((tmux + "send-keys -t w p").c_str());
  screen = wait_for("[paused");
  EXPECT_NE(screen.find("[paused"), std::string::npos) << screen;
  std::system((tmux + "send-keys -t w q").c_str());
  screen = wait_for("EXITED");
  EXPECT_NE(screen.find("EXITED 0"), std::string::npos) << screen;
  std::system((tmux + "kill-server 2>/dev/null").c_str());
}
