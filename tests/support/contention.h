#pragma once
// How much CPU the rest of the machine took while a test ran its job: for the tests that compare
// step times of real runs (a CPU-bound run stretches under other processes' load, a sleep-bound
// one hardly at all, so load moves their ratio). They retry once when the machine was busy with
// other work, never when it was quiet: on a quiet machine a miss is a real failure.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

namespace ts::test {

// Others' work of at least half a core on average during the job counts as a loaded machine:
// the jobs these tests run need about one core, so that much contention takes a visible share.
inline constexpr double kLoadedOtherCores = 0.5;

struct Contention {
  double other_cores = 0;  // mean CPU the job's processes did not use, in cores (0: quiet)
  double wall_s = 0;
  bool loaded() const { return other_cores >= kLoadedOtherCores; }
};

namespace contention_detail {

// All CPUs' busy time in seconds (/proc/stat "cpu" line: user nice system idle iowait irq
// softirq steal ...; busy = all but idle and iowait); -1 when unreadable.
inline double machine_busy_s() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  int64_t v[8] = {};
  if (!(f >> cpu) || cpu != "cpu") return -1;
  for (auto& x : v)
    if (!(f >> x)) return -1;
  const int64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return static_cast<double>(busy) / sysconf(_SC_CLK_TCK);
}

// CPU time of this process and of its children that have been waited for (recursively: each
// parent waits for its own), in seconds: the job's processes, whether run in-process or as a CLI.
inline double own_cpu_s() {
  auto secs = [](const rusage& r) {
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return secs(self) + secs(children);
}

}  // namespace contention_detail

// Runs `job` (which must wait for every process it starts) and says how busy the rest of the
// machine was meanwhile: the machine's busy CPU time minus the job's own, per second of wall time.
template <class F>
Contention measure_contention(F&& job) {
  using namespace contention_detail;
  const double busy0 = machine_busy_s(), own0 = own_cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  job();
  Contention c;
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy1 = machine_busy_s(), own1 = own_cpu_s();
  if (busy0 >= 0 && busy1 >= 0 && c.wall_s > 0) {
    const double others = (busy1 - busy0) - (own1 - own0);
    c.other_cores = others > 0 ? others / c.wall_s : 0;
  }
  return c;
}

}  // namespace ts::test
