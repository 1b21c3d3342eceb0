// Cost of one sampling tick: 8 GPUs (NVML injection library standing in for the driver),
// the host's /proc, and a 64-process tree. Reports µs per tick (CPU time of the sampling
// thread and wall time) and the share of one core at 10 Hz and 100 Hz, against a baseline
// measured in the same run: spawning one process (what every `nvidia-smi` query costs at
// least), and `nvidia-smi --query-gpu` itself where it exists.
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

#include "sample/sampler.h"

extern char** environ;

namespace {

double thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
double wall_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// root -> 7 children -> 8 grandchildren each: 64 processes, all asleep.
pid_t spawn_tree() {
  pid_t root = fork();
  if (root == 0) {
    for (int i = 0; i < 7; ++i) {
      if (fork() == 0) {
        for (int j = 0; j < 8; ++j)
          if (fork() == 0) {
            for (;;) pause();
          }
        for (;;) pause();
      }
    }
    for (;;) pause();
  }
  return root;
}

struct Cost {
  double cpu_us, wall_us;
};

// Median cost of one tick over n ticks (after warm-up).
Cost measure(ts::sample::Sampler& s, int n) {
  for (int i = 0; i < 5; ++i) s.tick();
  std::vector<double> cpu, wall;
  for (int i = 0; i < n; ++i) {
    double c0 = thread_cpu_us(), w0 = wall_us();
    s.tick();
    cpu.push_back(thread_cpu_us() - c0);
    wall.push_back(wall_us() - w0);
  }
  return {median(cpu), median(wall)};
}

// Wall time of spawning `argv` and waiting for it (its CPU is spent in another process).
double spawn_us(std::vector<const char*> argv, int n) {
  argv.push_back(nullptr);
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    double w0 = wall_us();
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawnp(&pid, argv[0], &fa, nullptr, const_cast<char* const*>(argv.data()), environ) != 0) return -1;
    int st;
    waitpid(pid, &st, 0);
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    t.push_back(wall_us() - w0);
  }
  return median(t);
}

}  // namespace

int main() {
  const char* script_path = "/tmp/ts_bench_inject.txt";
  {
    std::ofstream f(script_path);
    f << "gpus 8\nall name NVIDIA H100 80GB HBM3\nall util 100 0 50\nall gpm 1\nall gpm_sm 40\nall gpm_tensor 20\n"
         "all sample_period_us 16667\nall samples_per_call 6\nall driver_util 100 0\n"
         "all procs 1001:1000000 1002:2000000 1003:3000000 1004:4000000\n";
  }
  setenv("NVML_INJECT_SCRIPT", script_path, 1);
  pid_t root = spawn_tree();
  usleep(300000);  // let the tree form

  using namespace std::chrono_literals;
  auto make = [&](bool nvml, pid_t pid, std::chrono::milliseconds slow) {
    ts::sample::SamplerConfig c;
    c.interval = 0ms;  // tick() is called back to back here; slow 0 = the slow tier at every tick
    c.slow_interval = slow;
    c.root_pid = pid;
    c.use_nvml = nvml;
    c.nvml_library = TS_NVML_INJECT;
    return std::make_unique<ts::sample::Sampler>(c);
  };
  // Every tick reads everything (slow tier each time) vs the default split (fast every tick,
  // slow tier every 500 ms).
  auto full = make(true, root, 0ms);
  auto tree_count = full->tick().processes.size();
  const int n = 300;
  Cost c_full = measure(*full, n);
  auto fast = make(true, root, 3600s);
  Cost c_fast = measure(*fast, n * 3);
  auto host_only = make(false, 0, 0ms);
  Cost c_host = measure(*host_only, n);
  auto tree_only = make(false, root, 0ms);
  Cost c_tree = measure(*tree_only, n);
  auto gpus_host = make(true, 0, 0ms);
  Cost c_gpus_host = measure(*gpus_host, n);
  Cost c_gpus_full{c_gpus_host.cpu_us - c_host.cpu_us, c_gpus_host.wall_us - c_host.wall_us};

  double spawn = spawn_us({"/bin/true"}, 50);
  double smi = spawn_us({"nvidia-smi", "--query-gpu=index,name,utilization.gpu,utilization.memory,memory.used,"
                                       "memory.total,temperature.gpu,power.draw", "--format=csv,noheader,nounits"}, 5);
  kill(-root, SIGKILL);
  kill(root, SIGKILL);
  waitpid(root, nullptr, 0);

  fmt::print("sampler tick cost (median of {} ticks; 8 injected GPUs, GPM on, {} processes in the tree)\n", n, tree_count);
  fmt::print("{:<48} {:>10} {:>10}\n", "", "CPU µs", "wall µs");
  fmt::print("{:<48} {:>10.1f} {:>10.1f}\n", "full tick (8 GPUs all metrics + host + tree)", c_full.cpu_us, c_full.wall_us);
  fmt::print("{:<48} {:>10.1f} {:>10.1f}\n", "fast tick (GPU util/GPM/samples + /proc/stat)", c_fast.cpu_us, c_fast.wall_us);
  fmt::print("{:<48} {:>10.1f} {:>10.1f}\n", "  of which host-only full tick (no GPUs, no tree)", c_host.cpu_us, c_host.wall_us);
  fmt::print("{:<48} {:>10.1f} {:>10.1f}\n", "  host + 64-process tree (no GPUs)", c_tree.cpu_us, c_tree.wall_us);
  fmt::print("{:<48} {:>10.1f} {:>10.1f}\n", "  8 GPUs, all metrics (GPUs+host - host)", c_gpus_full.cpu_us, c_gpus_full.wall_us);

  auto share = [](double us_per_s) { return us_per_s / 1e6 * 100.0; };
  const double slow_extra = std::max(0.0, c_full.cpu_us - c_fast.cpu_us);
  fmt::print("\nshare of one core (CPU time):\n");
  for (int hz : {10, 100}) {
    double every = share(hz * c_full.cpu_us);
    double split = share(hz * c_fast.cpu_us + 2 * slow_extra);  // slow tier at 2 Hz
    fmt::print("  {:>3} Hz: everything every tick {:6.2f}%   default (slow tier at 2 Hz) {:6.2f}%\n", hz, every, split);
  }
  fmt::print("\nbaseline, same run: spawning /bin/true {:.0f} µs wall = {:.1f} full ticks\n", spawn, spawn / c_full.wall_us);
  if (smi < 0)
    fmt::print("nvidia-smi --query-gpu: not available on this machine (no NVIDIA driver); each call costs at least\n"
               "  the spawn above plus NVML initialisation, which trainscope pays once\n");
  else
    fmt::print("nvidia-smi --query-gpu: {:.0f} µs wall per call = {:.0f} full ticks\n", smi, smi / c_full.wall_us);
  return 0;
}
