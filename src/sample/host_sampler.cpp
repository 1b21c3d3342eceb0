#include "sample/host_sampler.h"

#include <dirent.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "sample/procfs.h"
#include "sample/process_tree.h"

namespace ts::sample {

HostSampler::HostSampler(std::string proc_root, std::string shm_path, pid_t root)
    : proc_root_(std::move(proc_root)), shm_path_(std::move(shm_path)), root_(root) {
  ticks_per_s_ = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (ticks_per_s_ <= 0) ticks_per_s_ = 100;
  page_size_ = sysconf(_SC_PAGESIZE);
}

void HostSampler::read_cpu(HostReading& h) {
  if (!procfs::read_text(proc_root_ + "/stat", buf_)) return;
  auto cpus = procfs::parse_stat(buf_);
  size_t slots = 1;
  for (const auto& c : cpus) slots = std::max<size_t>(slots, static_cast<size_t>(c.core + 2));
  if (prev_busy_.size() < slots) {
    prev_busy_.resize(slots, 0);
    prev_total_.resize(slots, 0);
  }
  h.core_busy_pct.clear();
  for (const auto& c : cpus) {
    size_t i = static_cast<size_t>(c.core + 1);
    uint64_t db = c.busy - std::min(c.busy, prev_busy_[i]);
    uint64_t dt = c.total - std::min(c.total, prev_total_[i]);
    double pct = dt ? 100.0 * static_cast<double>(db) / static_cast<double>(dt) : 0.0;
    prev_busy_[i] = c.busy;
    prev_total_[i] = c.total;
    if (c.core < 0) h.cpu_busy_pct = pct;
    else h.core_busy_pct.push_back(pct);
  }
}

void HostSampler::read_slow(HostReading& h) {
  if (procfs::read_text(proc_root_ + "/meminfo", buf_)) {
    auto m = procfs::parse_meminfo(buf_);
    h.mem_total_bytes = m.total_bytes;
    h.mem_available_bytes = m.available_bytes;
  }
  if (procfs::read_text(proc_root_ + "/pressure/cpu", buf_)) h.cpu_pressure = procfs::parse_pressure(buf_);
  CpuBudget b = read_cpu_budget(root_, proc_root_);
  h.cpu_cores_usable = b.cores_usable;
  h.cpu_budget_cores = b.budget_cores;
  struct statvfs sv;
  if (!shm_path_.empty() && statvfs(shm_path_.c_str(), &sv) == 0) {
    h.shm_total_bytes = static_cast<double>(sv.f_blocks) * sv.f_frsize;
    h.shm_used_bytes = static_cast<double>(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
  }
}

bool HostSampler::read_process(pid_t pid, double t_s, bool thread_names, ProcessReading& p) {
  const std::string base = proc_root_ + "/" + std::to_string(pid);
  // stat first: if it is gone the process exited, and nothing else is read.
  if (!procfs::read_text(base + "/stat", buf_)) return false;
  auto st = procfs::parse_pid_stat(buf_);
  if (!st) return false;
  p = ProcessReading{};
  p.pid = st->pid;
  p.ppid = st->ppid;
  p.comm = st->comm;
  p.state = st->state;
  p.threads = st->num_threads;
  p.rss_bytes = static_cast<double>(st->rss_pages) * page_size_;
  p.last_cpu = st->last_cpu;
  // The later files may vanish if the process exits meanwhile: keep what was read.
  if (procfs::read_text(base + "/status", buf_)) {
    auto s = procfs::parse_pid_status(buf_);
    p.voluntary_switches = s.voluntary_switches;
    p.nonvoluntary_switches = s.nonvoluntary_switches;
    if (s.threads > 0) p.threads = s.threads;
  }
  if (procfs::read_text(base + "/io", buf_)) {
    auto io = procfs::parse_pid_io(buf_);
    p.read_bytes = io.read_bytes;
    p.write_bytes = io.write_bytes;
  }
  procfs::SchedStat ss;
  if (procfs::read_text(base + "/schedstat", buf_)) ss = procfs::parse_schedstat(buf_);

  const Usage own{st->utime + st->stime, st->stime, st->minflt};
  const Usage children{st->cutime + st->cstime, st->cstime, st->cminflt};
  auto it = prev_.find(pid);
  const bool known = it != prev_.end() && it->second.starttime == st->starttime && t_s > it->second.t_s;
  // Born since the previous tree reading (starttime is in whole ticks, so one tick of slack):
  // everything it has used is this interval's.
  const bool born = !known && prev_tree_boot_s_ >= 0 && t_s > prev_tree_t_s_ &&
                    static_cast<double>(st->starttime + 1) / ticks_per_s_ > prev_tree_boot_s_;
  static const Prev kUnborn;  // zeros: a process born since the previous reading
  const Prev& from = known ? it->second : kUnborn;
  Usage reaped;
  if (known || born) {
    const double dt = t_s - (known ? from.t_s : prev_tree_t_s_);
    auto rise = [](uint64_t now, uint64_t was) { return static_cast<double>(now - std::min(now, was)); };
    const Usage used = own.since(from.own);
    p.cpu_pct = 100.0 * static_cast<double>(used.ticks) / ticks_per_s_ / dt;
    p.sys_pct = 100.0 * static_cast<double>(used.sys) / ticks_per_s_ / dt;
    p.minflt_per_s = static_cast<double>(used.minflt) / dt;
    p.nonvoluntary_per_s = rise(p.nonvoluntary_switches, from.nonvol) / dt;
    if (ss.ok) p.run_delay_ms_per_s = rise(ss.wait_ns, from.wait_ns) / 1e6 / dt;
    reaped = children.since(from.children);
  }
  Prev& pr = prev_[pid];
  const bool same = pr.starttime == st->starttime && pr.names_t_s >= 0;
  const bool names_due = !same || t_s - pr.names_t_s >= 5.0 || t_s < pr.names_t_s;
  if (!same) pr.thread_names.clear();
  pr.starttime = st->starttime;
  pr.ppid = st->ppid;
  pr.own = own;
  pr.nonvol = p.nonvoluntary_switches;
  pr.wait_ns = ss.wait_ns;
  pr.children = children;
  pr.reaped = reaped;
  pr.t_s = t_s;

  if (thread_names && !names_due) {
    p.thread_names = pr.thread_names;
  } else if (thread_names) {
    const std::string tdir = base + "/task";
    if (DIR* d = opendir(tdir.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        if (!procfs::read_text(tdir + "/" + e->d_name + "/comm", buf_)) continue;
        while (!buf_.empty() && buf_.back() == '\n') buf_.pop_back();
        if (std::find(p.thread_names.begin(), p.thread_names.end(), buf_) == p.thread_names.end())
          p.thread_names.push_back(buf_);
      }
      closedir(d);
    }
    std::sort(p.thread_names.begin(), p.thread_names.end());
    pr.thread_names = p.thread_names;
    pr.names_t_s = t_s;
  }
  return true;
}

std::vector<ProcessReading> HostSampler::read_tree(double t_s, bool thread_names) {
  std::vector<ProcessReading> out;
  if (root_ <= 0) return out;
  const double boot_s = procfs::read_text(proc_root_ + "/uptime", buf_) ? procfs::parse_uptime(buf_) : -1;
  std::vector<Seen> before;  // the previous tree reading's processes
  if (prev_tree_t_s_ >= 0)
    for (const auto& [pid, pr] : prev_)
      if (pr.t_s == prev_tree_t_s_)
        before.push_back({pid, pr.ppid, pr.starttime, pr.own + pr.children});
  auto pids = process_tree(root_, proc_root_);
  out.reserve(pids.size());
  for (pid_t pid : pids) {
    ProcessReading p;
    if (read_process(pid, t_s, thread_names, p)) out.push_back(std::move(p));
  }
  if (prev_tree_t_s_ >= 0 && t_s > prev_tree_t_s_) add_reaped(before, t_s - prev_tree_t_s_, out);
  prev_tree_t_s_ = t_s;
  prev_tree_boot_s_ = boot_s;
  // Forget processes that are gone, so the map does not grow over a long run.
  if (prev_.size() > 2 * out.size() + 64) {
    std::unordered_map<pid_t, Prev> keep;
    for (const auto& p : out) keep[p.pid] = std::move(prev_[p.pid]);
    prev_.swap(keep);
  }
  return out;
}

// A reaper's children totals rose by each reaped child's whole life (its own and its reaped
// children's ticks); the part up to the child's last reading is already in that reading.
void HostSampler::add_reaped(const std::vector<Seen>& before, double dt, std::vector<ProcessReading>& out) {
  std::unordered_map<pid_t, size_t> at;
  for (size_t i = 0; i < out.size(); ++i) at[out[i].pid] = i;
  // Signed: a reaper's rise less its exited children's last-seen totals (clamped when added).
  struct Left {
    double ticks = 0, sys = 0, minflt = 0;
  };
  std::vector<Left> left(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const Usage& r = prev_[out[i].pid].reaped;
    left[i] = {static_cast<double>(r.ticks), static_cast<double>(r.sys), static_cast<double>(r.minflt)};
  }
  std::unordered_map<pid_t, pid_t> parent_of;
  for (const Seen& was : before) parent_of[was.pid] = was.ppid;
  for (const Seen& was : before) {
    auto alive = at.find(was.pid);
    if (alive != at.end() && prev_[was.pid].starttime == was.starttime) continue;
    // Its reaper: the nearest ancestor still here (a parent that exited too was reaped by its own
    // parent, whose rise holds both lives).
    pid_t up = was.ppid;
    auto reaper = at.find(up);
    for (int hops = 0; reaper == at.end() && hops < 64; ++hops) {
      auto gone = parent_of.find(up);
      if (gone == parent_of.end()) break;
      up = gone->second;
      reaper = at.find(up);
    }
    if (reaper == at.end()) continue;
    Left& l = left[reaper->second];
    l.ticks -= static_cast<double>(was.life.ticks);
    l.sys -= static_cast<double>(was.life.sys);
    l.minflt -= static_cast<double>(was.life.minflt);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    ProcessReading& p = out[i];
    if (p.cpu_pct < 0) continue;  // no rate of its own to add to (its first reading)
    p.cpu_pct += 100.0 * std::max(0.0, left[i].ticks) / ticks_per_s_ / dt;
    p.sys_pct += 100.0 * std::max(0.0, left[i].sys) / ticks_per_s_ / dt;
    p.minflt_per_s += std::max(0.0, left[i].minflt) / dt;
  }
}

}  // namespace ts::sample
