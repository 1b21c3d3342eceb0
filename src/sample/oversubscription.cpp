#include "sample/oversubscription.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <string_view>
#include <thread>

#include "sample/cpu_budget.h"
#include "sample/procfs.h"

namespace ts::sample {
namespace {

std::string proc_path(int pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + rest; }

std::vector<std::string> list_tasks(int pid) {
  std::vector<std::string> out;
  DIR* d = opendir(proc_path(pid, "/task").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

// One variable from NUL-separated /proc/PID/environ text; "" when unset.
std::string environ_value(std::string_view environ, std::string_view key) {
  while (!environ.empty()) {
    auto nul = environ.find('\0');
    std::string_view kv = environ.substr(0, nul);
    environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
    if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=')
      return std::string(kv.substr(key.size() + 1));
  }
  return {};
}

// Summed over a process's threads: non-voluntary switches and schedstat run-queue wait (ns).
void read_switches_and_wait(int pid, const std::vector<std::string>& tids, double& nonvol, double& wait_ns,
                            bool& have_wait) {
  nonvol = 0;
  wait_ns = 0;
  for (const auto& tid : tids) {
    std::string base = proc_path(pid, "/task/" + tid), text;
    if (procfs::read_text(base + "/status", text))
      nonvol += static_cast<double>(procfs::parse_pid_status(text).nonvoluntary_switches);
    if (procfs::read_text(base + "/schedstat", text)) {
      auto s = procfs::parse_schedstat(text);
      if (s.ok && (s.on_cpu_ns > 0 || s.wait_ns > 0)) {
        have_wait = true;
        wait_ns += static_cast<double>(s.wait_ns);
      }
    }
  }
}

}  // namespace

Oversubscription measure_oversubscription(const std::vector<int>& pids, double window_s, int cpu_budget,
                                          double period_s) {
  using Clock = std::chrono::steady_clock;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  Oversubscription o;
  if (cpu_budget > 0) {
    o.cpu_budget = cpu_budget;
  } else if (!pids.empty()) {
    // 1.5 cores of quota keep two threads partly busy: round up.
    o.cpu_budget = read_cpu_budget(pids.front()).whole_cores();
  }
  if (pids.empty()) {
    o.summary = "no processes to measure";
    return o;
  }

  struct Track {
    ProcessLoad load;
    std::map<std::string, double> cpu_first, cpu_last;  // per tid, seconds
    double nonvol0 = 0, nonvol1 = 0, wait0 = 0, wait1 = 0;
    bool have_wait = false;
    long runnable_sum = 0;
    long parallel_samples = 0;  // samples with >= 2 threads in state R
    int samples_seen = 0;
  };
  std::vector<Track> tracks(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    auto& t = tracks[i];
    t.load.pid = pids[i];
    std::string text;
    if (procfs::read_text(proc_path(pids[i], "/comm"), text)) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      t.load.comm = text;
    }
    if (procfs::read_text(proc_path(pids[i], "/environ"), text))
      t.load.omp_num_threads = environ_value(text, "OMP_NUM_THREADS");
    read_switches_and_wait(pids[i], list_tasks(pids[i]), t.nonvol0, t.wait0, t.have_wait);
  }

  auto start = Clock::now(), last_alive = start;
  bool ended_early = false;
  auto period = std::chrono::microseconds(static_cast<int64_t>(period_s * 1e6));
  auto next = start;
  do {
    bool any_alive = false;
    auto now = Clock::now();
    for (auto& t : tracks) {
      auto tids = list_tasks(t.load.pid);
      int live = 0, runnable = 0;
      for (const auto& tid : tids) {
        std::string text;
        if (!procfs::read_text(proc_path(t.load.pid, "/task/" + tid + "/stat"), text)) continue;
        auto st = procfs::parse_pid_stat(text);
        if (!st || st->state == 'Z' || st->state == 'X') continue;  // exited, not yet reaped
        ++live;
        if (st->state == 'R') ++runnable;
        double cpu_s = static_cast<double>(st->utime + st->stime) / ticks;
        t.cpu_first.emplace(tid, cpu_s);
        t.cpu_last[tid] = cpu_s;
      }
      if (live == 0) continue;  // gone (or not ours): what was measured before stays
      any_alive = true;
      ++t.samples_seen;
      t.runnable_sum += runnable;
      if (runnable >= 2) ++t.parallel_samples;
      t.load.threads = live;
    }
    // Every process gone (the job ended): the window ends with the last sample that saw one,
    // so a short job is not judged on samples of nothing.
    if (!any_alive) {
      ended_early = true;
      break;
    }
    ++o.samples;
    last_alive = now;
    next += period;
    std::this_thread::sleep_until(next);
  } while (Clock::now() - start < std::chrono::duration<double>(window_s));
  o.window_s = ended_early ? std::chrono::duration<double>(last_alive - start).count() + period_s
                           : std::chrono::duration<double>(Clock::now() - start).count();

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
    l.parallel_share = t.samples_seen > 0 ? static_cast<double>(t.parallel_samples) / t.samples_seen : 0;
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

}  // namespace ts::sample
