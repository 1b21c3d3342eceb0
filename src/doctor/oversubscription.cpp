#include "doctor/oversubscription.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <sstream>
#include <thread>

#include "doctor/proc_inspect.h"

namespace ts::doctor {
namespace {

struct ThreadStat {
  char state = '?';
  double cpu_s = 0;
};

bool read_thread_stat(const std::string& path, ThreadStat& out) {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::string text;
  if (!read_small_file(path, text)) return false;
  auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string f;
  // Fields after comm start at 3 (state); utime is 14, stime 15.
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> f; ++i) {
    if (i == 3) out.state = f.empty() ? '?' : f[0];
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) stime = std::atof(f.c_str());
  }
  out.cpu_s = (utime + stime) / ticks;
  return true;
}

std::vector<std::string> list_tasks(int pid) {
  std::vector<std::string> out;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

// Summed over a process's threads: non-voluntary switches and schedstat wait (ns).
void read_switches_and_wait(int pid, const std::vector<std::string>& tids, double& nonvol, double& wait_ns,
                            bool& have_wait) {
  nonvol = 0;
  wait_ns = 0;
  for (const auto& tid : tids) {
    std::string base = "/proc/" + std::to_string(pid) + "/task/" + tid;
    std::string status;
    if (read_small_file(base + "/status", status)) {
      auto at = status.find("nonvoluntary_ctxt_switches:");
      if (at != std::string::npos) nonvol += std::atof(status.c_str() + at + 27);
    }
    std::string sched;
    if (read_small_file(base + "/schedstat", sched)) {
      std::istringstream s(sched);
      double run = 0, wait = 0;
      if (s >> run >> wait && (run > 0 || wait > 0)) {
        have_wait = true;
        wait_ns += wait;
      }
    }
  }
}

}  // namespace

Oversubscription measure_oversubscription(const std::vector<int>& pids, double window_s, int cpu_budget,
                                          double period_s) {
  using Clock = std::chrono::steady_clock;
  Oversubscription o;
  o.cpu_budget = cpu_budget > 0 ? cpu_budget : (pids.empty() ? 0 : read_cpu_budget(pids.front()).effective());
  if (pids.empty()) {
    o.summary = "no processes to measure";
    return o;
  }

  struct Track {
    ProcessLoad load;
    std::map<std::string, double> cpu_first, cpu_last;  // per tid
    double nonvol0 = 0, nonvol1 = 0, wait0 = 0, wait1 = 0;
    bool have_wait = false;
    long runnable_sum = 0;
    int samples_seen = 0;
  };
  std::vector<Track> tracks(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    auto& t = tracks[i];
    t.load.pid = pids[i];
    std::string comm, environ;
    if (read_small_file("/proc/" + std::to_string(pids[i]) + "/comm", comm)) {
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      t.load.comm = comm;
    }
    if (read_small_file("/proc/" + std::to_string(pids[i]) + "/environ", environ)) {
      auto env = parse_environ(environ, {"OMP_NUM_THREADS"});
      if (auto it = env.find("OMP_NUM_THREADS"); it != env.end()) t.load.omp_num_threads = it->second;
    }
    read_switches_and_wait(pids[i], list_tasks(pids[i]), t.nonvol0, t.wait0, t.have_wait);
  }

  auto start = Clock::now();
  auto period = std::chrono::microseconds(static_cast<int64_t>(period_s * 1e6));
  auto next = start;
  do {
    for (auto& t : tracks) {
      auto tids = list_tasks(t.load.pid);
      if (tids.empty()) continue;
      ++t.samples_seen;
      for (const auto& tid : tids) {
        ThreadStat st;
        if (!read_thread_stat("/proc/" + std::to_string(t.load.pid) + "/task/" + tid + "/stat", st)) continue;
        if (st.state == 'R') ++t.runnable_sum;
        t.cpu_first.emplace(tid, st.cpu_s);
        t.cpu_last[tid] = st.cpu_s;
      }
      t.load.threads = static_cast<int>(tids.size());
    }
    ++o.samples;
    next += period;
    std::this_thread::sleep_until(next);
  } while (Clock::now() - start < std::chrono::duration<double>(window_s));
  o.window_s = std::chrono::duration<double>(Clock::now() - start).count();

  double wait_total = 0;
  bool any_wait = false;
  for (auto& t : tracks) {
    bool have_wait = false;
    read_switches_and_wait(t.load.pid, list_tasks(t.load.pid), t.nonvol1, t.wait1, have_wait);
    auto& l = t.load;
    double cpu = 0;
    for (const auto& [tid, last] : t.cpu_last) cpu += last - t.cpu_first[tid];
    l.cpu_cores = cpu / o.window_s;
    // Mean over all samples: a process that exited counts 0 for the samples after.
    l.runnable_threads = o.samples > 0 ? static_cast<double>(t.runnable_sum) / o.samples : 0;
    if (t.samples_seen > 0 && t.nonvol1 >= t.nonvol0) l.nonvoluntary_per_s = (t.nonvol1 - t.nonvol0) / o.window_s;
    if (t.have_wait && have_wait && t.wait1 >= t.wait0) {
      l.runqueue_wait_cores = (t.wait1 - t.wait0) / 1e9 / o.window_s;
      wait_total += l.runqueue_wait_cores;
      any_wait = true;
    }
    if (t.samples_seen == 0) continue;
    ++o.processes;
    o.threads_total += l.threads;
    o.runnable_threads += l.runnable_threads;
    o.cpu_cores_used += l.cpu_cores;
    o.per_process.push_back(l);
  }
  if (any_wait) o.runqueue_wait_cores = wait_total;
  const double budget = o.cpu_budget > 0 ? o.cpu_budget : 1;
  o.oversubscribed = o.runnable_threads > 1.25 * budget && o.runnable_threads > budget + 0.5;
  o.summary = fmt::format("{} process{}: {:.1f} threads want a core on average, {} core{} usable, {:.2f} cores used{}",
                          o.processes, o.processes == 1 ? "" : "es", o.runnable_threads, o.cpu_budget,
                          o.cpu_budget == 1 ? "" : "s", o.cpu_cores_used,
                          o.oversubscribed ? fmt::format(" — oversubscribed {:.1f}x", o.runnable_threads / budget)
                                           : std::string());
  return o;
}

}  // namespace ts::doctor
