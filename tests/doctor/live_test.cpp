// The doctor on the live system: the probe in Debian's Python (torch 1.13), /proc of real
// processes, oversubscription of real spinning threads, the NVML path against the sample
// layer's injection library (a STAND-IN for the NVIDIA driver, scripted per test), and the
// CLI end to end. Every child process is bounded and reaped.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <simdjson.h>
#include <sstream>
#include <thread>

#include "doctor/checks/checks.h"
#include "doctor/doctor.h"
#include "doctor/nvidia_facts.h"
#include "doctor/proc_inspect.h"
#include "doctor/python_probe.h"
#include "sample/inject_script.h"
#include "sample/oversubscription.h"
#include "support/contains.h"

using namespace ts::doctor;
using ts::sample::measure_oversubscription;
using ts::sample::Oversubscription;

namespace {

struct CmdResult {
  int status = -1;
  std::string out;
};

CmdResult run_cmd(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A child that spins `threads` threads for at most `seconds`, then exits by itself.
pid_t spawn_spinners(int threads, double seconds) {
  pid_t pid = fork();
  if (pid == 0) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([end] {
        unsigned long x = 0;
        while (std::chrono::steady_clock::now() < end) x = x + 1;
        asm volatile("" : : "r"(x));
      });
    for (auto& t : ts) t.join();
    _exit(0);
  }
  return pid;
}

void stop(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

using ts::test::has;

}  // namespace

TEST(Probe, DebianPythonWithTorch) {
  auto expected = run_cmd("/usr/bin/python3 -c 'import torch; print(torch.__version__); print(torch.get_num_threads())'");
  ASSERT_EQ(expected.status, 0) << "Debian's python3-torch is a test dependency";
  std::istringstream lines(expected.out);
  std::string version, threads;
  std::getline(lines, version);
  std::getline(lines, threads);

  ProbeResult r = run_python_probe("/usr/bin/python3", 120);
  ASSERT_TRUE(r.python.ran) << r.python.error;
  EXPECT_TRUE(r.python.has_torch);
  EXPECT_EQ(r.python.torch_version, version);
  EXPECT_EQ(r.python.num_threads, std::stoi(threads));
  EXPECT_TRUE(r.python.torch_cuda.empty());  // Debian's build is CPU-only
  EXPECT_EQ(r.python.cuda_available, 0);
  EXPECT_TRUE(r.python.has_numpy);
  // The probe was alive when we read its maps: torch's OpenMP runtime is there, on disk.
  ASSERT_TRUE(r.process.readable) << r.process.read_error;
  bool gomp = false;
  for (const auto& rt : r.process.runtimes)
    if (rt.kind == "openmp" && rt.vendor == "GNU OpenMP") gomp = access(rt.path.c_str(), R_OK) == 0;
  EXPECT_TRUE(gomp);
  bool torch_c = false;
  for (const auto& lib : r.process.libraries) torch_c = torch_c || has(lib, "/torch/_C");
  EXPECT_TRUE(torch_c);
  // And torch/version.py next to it says the same version (what --pid relies on).
  EXPECT_EQ(torch_from_maps(r.process.libraries).version, version);
}

TEST(Probe, MissingInterpreterIsAnErrorNotACrash) {
  ProbeResult r = run_python_probe("/nonexistent/python3", 10);
  EXPECT_FALSE(r.python.ran);
  EXPECT_TRUE(has(r.python.error, "/nonexistent/python3")) << r.python.error;
}

TEST(Probe, PythonThatPrintsGarbage) {
  // /bin/echo ignores the script and prints its arguments: not JSON.
  ProbeResult r = run_python_probe("/bin/echo", 10);
  EXPECT_FALSE(r.python.ran);
  EXPECT_TRUE(has(r.python.error, "not JSON")) << r.python.error;
}

TEST(ProcLive, SelfAndChildren) {
  ProcessFacts f = inspect_process(getpid());
  ASSERT_TRUE(f.readable);
  std::string status;
  ASSERT_TRUE(read_small_file("/proc/self/status", status));
  int threads = std::atoi(status.c_str() + status.find("Threads:") + 8);
  EXPECT_EQ(f.threads, threads);
  bool libstdcxx = false;
  for (const auto& l : f.libraries) libstdcxx = libstdcxx || has(l, "libstdc++");
  EXPECT_TRUE(libstdcxx);

  pid_t child = fork();
  if (child == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      sleep(20);
      _exit(0);
    }
    sleep(20);
    _exit(0);
  }
  std::vector<ChildProcess> tree;
  for (int i = 0; i < 100 && tree.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    tree = process_descendants(getpid());
  }
  ASSERT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree[0].pid, child);
  EXPECT_EQ(tree[1].ppid, child);
  kill(tree[1].pid, SIGKILL);
  stop(child);
}

TEST(ProcLive, CpuBudgetMatchesTheKernel) {
  CpuBudget b = ts::sample::read_cpu_budget(getpid());
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(b.cores_usable, CPU_COUNT(&set));
  EXPECT_EQ(b.online, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(b.whole_cores(), 1);
  EXPECT_LE(b.whole_cores(), b.cores_usable);
}

TEST(Oversubscription, SixSpinningThreadsOnTwoCores) {
  // Two "ranks" with three busy threads each, against a budget of two cores.
  pid_t a = spawn_spinners(3, 10), b = spawn_spinners(3, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Oversubscription o = measure_oversubscription({a, b}, 1.0, 2);
  stop(a);
  stop(b);
  EXPECT_EQ(o.processes, 2);
  EXPECT_EQ(o.threads_total, 8);  // each child: a main thread in join() + 3 spinners
  EXPECT_GE(o.runnable_threads, 5.0) << o.summary;  // spinning threads are always R
  EXPECT_TRUE(o.oversubscribed) << o.summary;
  EXPECT_GT(o.samples, 5);
  EXPECT_TRUE(has(o.summary, "oversubscribed")) << o.summary;
  // Three spinners side by side in every sample (R whether running or queued for a core).
  for (const auto& p : o.per_process) EXPECT_GE(p.parallel_share, 0.9) << p.pid;
}

TEST(Oversubscription, OneBusyThreadIsFine) {
  pid_t a = spawn_spinners(1, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Oversubscription o = measure_oversubscription({a}, 0.6, 2);
  stop(a);
  EXPECT_EQ(o.processes, 1);
  EXPECT_LE(o.runnable_threads, 1.01);
  ASSERT_EQ(o.per_process.size(), 1u);
  EXPECT_EQ(o.per_process[0].parallel_share, 0);  // its main thread sleeps in join(): never two at once
  EXPECT_FALSE(o.oversubscribed) << o.summary;
}

TEST(Oversubscription, ProcessGoneIsNotAnError) {
  Oversubscription o = measure_oversubscription({999999}, 0.2, 2);
  EXPECT_EQ(o.processes, 0);
  EXPECT_FALSE(o.oversubscribed);
}

TEST(Nvidia, NoDriverHere) {
  NvidiaFacts f = read_nvidia("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(f.driver_found);
  EXPECT_TRUE(has(f.error, "no NVIDIA driver found")) << f.error;
}

#ifdef TS_NVML_INJECT
TEST(Nvidia, InjectedGpusFeedTheChecks) {
  ts::test::InjectScript s(
      "gpus 2\n"
      "gpu 0 name NVIDIA H100 80GB HBM3\n"
      "all util 0\n"
      "gpu 0 reasons 65\n"  // 0x41: idle + hw thermal slowdown
      "gpu 1 pcie_width 8\n"
      "gpu 1 procs 1:1073741824\n");
  NvidiaFacts nv = read_nvidia(TS_NVML_INJECT);
  ASSERT_TRUE(nv.driver_found) << nv.error;
  ASSERT_EQ(nv.gpus.size(), 2u);
  EXPECT_EQ(nv.driver_version, "550.54.15");
  EXPECT_EQ(nv.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(nv.gpus[0].throttle_reasons, 0x41);
  EXPECT_EQ(nv.gpus[1].pcie_width, 8);
  EXPECT_EQ(nv.gpus[1].pcie_width_max, 16);
  ASSERT_EQ(nv.gpus[1].processes.size(), 1u);
  EXPECT_EQ(nv.gpus[1].processes[0].pid, 1);
  EXPECT_EQ(nv.gpus[1].processes[0].used_bytes, 1ULL << 30);
  // The stand-in has no ECC or compute-capability symbols: those stay unknown, not errors.
  EXPECT_EQ(nv.gpus[0].ecc_uncorrected_volatile, -1);
  EXPECT_EQ(nv.gpus[0].cc_major, -1);

  DoctorFacts f;
  f.nvidia = nv;
  f.process.pid = getpid();
  EXPECT_EQ(check_nvidia_driver(f).status, Status::pass);
  EXPECT_EQ(check_pcie_link(f).status, Status::warn);
  EXPECT_EQ(check_gpu_throttle(f).status, Status::fail);
  auto busy = check_gpu_busy(f);
  EXPECT_EQ(busy.status, Status::warn);
  EXPECT_TRUE(has(busy.summary, "pid 1 ")) << busy.summary;
}
#endif

TEST(Cli, JsonHasEveryCheck) {
  auto r = run_cmd(std::string(TS_CLI) + " -q doctor --json --python /usr/bin/python3 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;  // nothing fails on this machine
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(std::string_view(doc["schema"]), "trainscope.doctor/1");
  simdjson::dom::array checks = doc["checks"];
  EXPECT_EQ(checks.size(), 14u);
  int64_t total = int64_t(doc["counts"]["pass"]) + int64_t(doc["counts"]["warn"]) +
                  int64_t(doc["counts"]["fail"]) + int64_t(doc["counts"]["skip"]);
  EXPECT_EQ(total, 14);
  std::string_view first = checks.at(0)["id"];
  EXPECT_EQ(first, "nvidia-driver");
  EXPECT_EQ(std::string_view(doc["python"]["torch_version"]).substr(0, 5), "1.13.");
}

TEST(Cli, FailingCheckExitsOneWithOneLine) {
  auto r = run_cmd(std::string(TS_CLI) + " -q doctor --python /nonexistent/python3 2>&1 >/dev/null");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(trim(r.out), "trainscope: doctor: 1 check failed (torch-installed)");
  r = run_cmd(std::string(TS_CLI) + " -q doctor --pid 999999 2>&1");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(trim(r.out), "trainscope: --pid 999999: no such process");
}

TEST(Cli, PidOfARunningTorchJob) {
  // A "training job": Debian's python with torch imported, sleeping; bounded to 60 s.
  pid_t job = fork();
  if (job == 0) {
    // argv[0] is the full path: Python finds its prefix from argv[0] through PATH, and a PATH that
    // starts with another Python's bin/ (pyenv exec, which runs ctest here) would give it that one's.
    execl("/usr/bin/python3", "/usr/bin/python3", "-c", "import torch, time; time.sleep(60)", nullptr);
    _exit(127);
  }
  std::string maps;
  for (int i = 0; i < 300 && !has(maps, "torch/_C"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    read_small_file("/proc/" + std::to_string(job) + "/maps", maps);
  }
  ASSERT_TRUE(has(maps, "torch/_C"));
  auto r = run_cmd("OMP_NUM_THREADS=3 " + std::string(TS_CLI) + " -q doctor --json --pid " + std::to_string(job) +
                   " 2>/dev/null");
  stop(job);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(int64_t(doc["target"]["pid"]), job);
  EXPECT_EQ(std::string_view(doc["python"]["torch_version"]).substr(0, 5), "1.13.");
  bool thread_check = false;
  for (auto c : simdjson::dom::array(doc["checks"])) {
    if (std::string_view(c["id"]) != "thread-budget") continue;
    thread_check = true;
    EXPECT_EQ(std::string_view(c["status"]), "pass");
    // The job's environment, not ours: OMP_NUM_THREADS=3 was set on the doctor, not the job.
    for (auto e : simdjson::dom::array(c["evidence"])) {
      if (std::string_view(e["name"]) == "OMP_NUM_THREADS") {
        EXPECT_EQ(std::string_view(e["value"]), "unset");
      }
    }
  }
  EXPECT_TRUE(thread_check);
}
