#include "run/job_inspect.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <map>
#include <set>

#include "diagnose/device_peaks.h"
#include "run/rank_summary.h"
#include "sample/cpu_budget.h"
#include "util/json_writer.h"

namespace ts::run {
namespace {

bool alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

std::string basename_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

std::vector<JobProcess> training_processes(const Records& records, pid_t root) {
  std::map<pid_t, int64_t> steps;
  for (const auto& s : records.steps) ++steps[s.pid];
  for (const auto& [key, t] : records.step_totals) steps[key.first] = std::max(steps[key.first], t.count);
  // torchrun ranks, as the per-rank table defines them (rank_summary.h: RANK set, WORLD_SIZE > 1,
  // so not the launcher). A Python a rank starts (spawn-method DataLoader workers) inherits RANK:
  // per rank, the process with the most steps wins, then the one whose parent is not another
  // process of that rank (ppid from its hello).
  std::map<pid_t, pid_t> ppid;
  for (const auto& t : records.texts)
    if (t.kind == "hello") ppid[t.pid] = static_cast<pid_t>(t.get_int("ppid", 0));
  std::map<int, std::vector<pid_t>> by_rank;
  for (const auto& [pid, rp] : rank_processes(records)) by_rank[rp.rank].push_back(pid);
  std::vector<JobProcess> ranks;
  for (const auto& [rank, cands] : by_rank) {
    std::set<pid_t> same(cands.begin(), cands.end());
    auto score = [&](pid_t pid) {
      int64_t n = steps.count(pid) ? steps[pid] : 0;
      return std::make_pair(n, same.count(ppid[pid]) ? 0 : 1);
    };
    pid_t best = *std::max_element(cands.begin(), cands.end(), [&](pid_t a, pid_t b) { return score(a) < score(b); });
    JobProcess p;
    p.pid = static_cast<int>(best);
    p.rank = rank;
    p.steps = steps.count(best) ? steps[best] : 0;
    ranks.push_back(p);
  }
  if (!ranks.empty()) return ranks;  // by rank (map order)
  std::vector<JobProcess> out;
  for (auto [pid, n] : steps) {
    JobProcess p;
    p.pid = static_cast<int>(pid);
    p.steps = n;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.steps > b.steps; });
  if (out.empty()) {
    JobProcess p;
    p.pid = static_cast<int>(root);
    out.push_back(p);
  }
  return out;
}

std::vector<int> child_processes(int pid) {
  std::vector<int> out;
  std::error_code ec;
  const std::string task = fmt::format("/proc/{}/task", pid);
  for (const auto& t : std::filesystem::directory_iterator(task, ec)) {
    std::ifstream in(t.path() / "children");
    int c = 0;
    while (in >> c)
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

void read_runtimes(JobInspection& out, std::vector<JobProcess> procs) {
  out.cpu_vendor = sample::host_cpu_vendor();
  std::set<std::string> blas, omp;
  for (auto& p : procs) {
    auto rt = sample::read_process_runtimes(p.pid);
    p.readable = rt.readable;
    p.runtimes = std::move(rt.runtimes);
    for (const auto& r : p.runtimes) {
      auto& dst = r.kind == "blas" ? out.blas_libs : out.openmp_libs;
      auto& seen = r.kind == "blas" ? blas : omp;
      if (seen.insert(r.path).second) dst.push_back(r.path);
    }
    if (p.readable) out.inspected = true;
  }
  out.processes = std::move(procs);
  if (!out.inspected) out.skipped = "the training processes' /proc/PID/maps could not be read (gone or not ours)";
}

JobInspector::JobInspector(pid_t root, std::function<Records()> records, Config cfg)
    : root_(root), records_(std::move(records)), cfg_(cfg) {
  thread_ = std::thread([this] { loop(); });
}

JobInspector::~JobInspector() {
  if (thread_.joinable()) finish();
}

void JobInspector::on_step(pid_t pid, int64_t step) {
  int64_t prev = max_step_.load(std::memory_order_relaxed);
  while (step > prev && !max_step_.compare_exchange_weak(prev, step, std::memory_order_relaxed)) {
  }
  if (step < cfg_.trigger_step) return;
  // Under the lock, so the wake-up cannot slip in before the wait; the inspector holds it only
  // to read these sets, never while it measures.
  std::lock_guard<std::mutex> lk(mu_);
  if (warm_.insert(pid).second) cv_.notify_all();
}

bool JobInspector::new_warm_process() const {
  for (pid_t p : warm_)
    if (!looked_at_.count(p)) return true;
  return false;
}

JobInspection JobInspector::finish() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  return result_;
}

void JobInspector::loop() {
  // An exception escaping a std::thread would end trainscope (and orphan the job): never.
  try {
    run();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu_);
    if (result_.inspected || result_.oversubscription) return;  // a later look failed: keep the first
    result_ = JobInspection{};
    result_.skipped = std::string("job inspection failed: ") + e.what();
  }
}

void JobInspector::run() {
  // A background look must not take CPU from the job: this thread runs niced (Linux applies
  // setpriority to the calling thread when given its tid).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.fallback_s));
  bool by_step = false;
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_until(lk, deadline, [&] { return stop_ || max_step_.load() >= cfg_.trigger_step; });
    if (max_step_.load() >= cfg_.trigger_step) {
      by_step = true;
    } else if (stop_) {
      result_.skipped = fmt::format("the job ended before step {} (and within {:.0f} s): not inspected",
                                    cfg_.trigger_step, cfg_.fallback_s);
      return;
    }
  }
  std::string trigger = by_step ? fmt::format("step {}", cfg_.trigger_step)
                                : fmt::format("after {:.0f} s without {} steps", cfg_.fallback_s, cfg_.trigger_step);
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  JobInspection j = look(trigger, seconds());
  {
    std::lock_guard<std::mutex> lk(mu_);
    result_ = std::move(j);
  }
  for (int n = 1; n < kMaxLooks; ++n) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || new_warm_process(); });
      if (stop_) return;
    }
    JobInspection k = look(fmt::format("step {} of a training process that started later", cfg_.trigger_step), seconds());
    auto seen = [](const JobInspection& x) { return x.oversubscription ? x.oversubscription->processes : 0; };
    std::lock_guard<std::mutex> lk(mu_);
    if (seen(k) > seen(result_)) {
      result_ = std::move(k);
    } else {
      result_.cost_cpu_s = k.cost_cpu_s;  // the looks' cost so far, kept or not
    }
  }
}

JobInspection JobInspector::look(const std::string& trigger, double at_s) {
  JobInspection j;
  j.trigger = trigger;
  j.at_s = at_s;
  std::set<pid_t> considered;
  {
    std::lock_guard<std::mutex> lk(mu_);
    considered = warm_;
  }
  std::vector<JobProcess> procs;
  try {
    procs = training_processes(records_ ? records_() : Records{}, root_);
  } catch (const std::exception&) {
    procs = training_processes(Records{}, root_);
  }
  read_runtimes(j, procs);
  std::vector<int> pids;
  for (const auto& p : j.processes) {
    considered.insert(p.pid);
    if (alive(p.pid)) pids.push_back(p.pid);
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    looked_at_.insert(considered.begin(), considered.end());
  }
  // Their children (DataLoader workers) share the cores: measured with them, marked as theirs.
  const size_t trainers = pids.size();
  for (size_t i = 0; i < trainers; ++i)
    for (int c : child_processes(pids[i]))
      if (std::find(pids.begin(), pids.end(), c) == pids.end() && alive(c)) {
        pids.push_back(c);
        j.worker_of[c] = pids[i];
      }
  if (!pids.empty()) {
    int budget = cfg_.cpu_budget;
    if (budget <= 0) budget = sample::read_cpu_budget(root_).whole_cores();
    // The measure ends early by itself once every process has exited.
    j.oversubscription = sample::measure_oversubscription(pids, cfg_.window_s, budget);
  }
  // What the looks cost (this thread's CPU time, all looks so far): the job must not pay for
  // being watched.
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0)
    j.cost_cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                   static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return j;
}

void fill_evidence(const JobInspection& j, diagnose::SamplesEvidence& s) {
  if (!j.cpu_vendor.empty()) s.cpu_vendor = j.cpu_vendor;
  s.blas_libs = j.blas_libs;
  s.openmp_libs = j.openmp_libs;
  if (!j.oversubscription || j.oversubscription->processes == 0) return;
  const auto& o = *j.oversubscription;
  s.threads_measured = true;
  s.threads_window_s = o.window_s;
  s.threads_samples = o.samples;
  s.runnable_threads_mean = o.runnable_threads;
  s.thread_budget_cores = o.cpu_budget;
  s.threads_oversubscribed = o.oversubscribed;
  s.threads_summary = o.summary;
  s.thread_loads.clear();
  for (const auto& l : o.per_process) {
    diagnose::SamplesEvidence::ThreadLoad t;
    t.pid = l.pid;
    t.threads = l.threads;
    t.runnable = l.runnable_threads;
    t.cpu_cores = l.cpu_cores;
    t.nonvoluntary_per_s = l.nonvoluntary_per_s;
    t.parallel_share = l.parallel_share;
    t.omp_num_threads = l.omp_num_threads;
    for (const auto& p : j.processes)
      if (p.pid == l.pid) t.rank = p.rank;
    if (auto w = j.worker_of.find(l.pid); w != j.worker_of.end()) t.worker_of = w->second;
    s.thread_loads.push_back(t);
  }
}

namespace {

// Achieved model FLOP/s and MFU from the agent's FLOPs per step and median step time.
diagnose::Mfu mfu_of(const diagnose::AgentEvidence* a) {
  if (!a) return {};
  bool gpu = a->param_device.rfind("cuda", 0) == 0;
  bool half = !a->autocast_dtype.empty() || a->param_dtype == "torch.bfloat16" || a->param_dtype == "torch.float16";
  return diagnose::model_flops_utilisation(a->model_flops_per_step, a->step_ms, a->device_name, a->device_capability,
                                           half, gpu, a->tf32_matmul);
}

}  // namespace

std::string host_section_json(const JobInspection& j, const diagnose::AgentEvidence* agent) {
  JsonWriter w;
  w.begin_object();
  w.field("inspected", j.inspected);
  w.field("trigger", j.trigger);
  w.field("at_s", j.at_s);
  w.field("cost_cpu_s", j.cost_cpu_s);
  w.field("skipped", j.skipped);
  w.field("cpu_vendor", j.cpu_vendor);
  w.array("blas_libs", j.blas_libs);
  w.array("openmp_libs", j.openmp_libs);
  w.key("processes").begin_array();
  for (const auto& p : j.processes) {
    w.begin_object().field("pid", p.pid).field("rank", p.rank).field("steps", p.steps).field("maps_readable", p.readable);
    w.key("runtimes").begin_array();
    for (const auto& r : p.runtimes) w.begin_object().field("kind", r.kind).field("vendor", r.vendor).field("path", r.path).end_object();
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("oversubscription");
  if (j.oversubscription) {
    const auto& o = *j.oversubscription;
    w.begin_object();
    w.field("window_s", o.window_s).field("samples", o.samples).field("cpu_budget", o.cpu_budget);
    w.field("processes", o.processes).field("threads_total", o.threads_total);
    w.field("runnable_threads_mean", o.runnable_threads).field("cpu_cores_used", o.cpu_cores_used);
    w.key("runqueue_wait_cores");
    if (o.runqueue_wait_cores >= 0) w.value(o.runqueue_wait_cores); else w.null();
    w.field("oversubscribed", o.oversubscribed).field("summary", o.summary);
    w.key("per_process").begin_array();
    for (const auto& l : o.per_process) {
      int rank = -1;
      for (const auto& p : j.processes)
        if (p.pid == l.pid) rank = p.rank;
      w.begin_object().field("pid", l.pid).field("rank", rank).field("comm", l.comm).field("threads", l.threads);
      w.field("runnable_threads", l.runnable_threads).field("parallel_share", l.parallel_share);
      w.field("cpu_cores", l.cpu_cores).field("nonvoluntary_switches_per_s", l.nonvoluntary_per_s);
      w.key("omp_num_threads");
      if (l.omp_num_threads.empty()) w.null(); else w.value(l.omp_num_threads);
      w.key("child_of");
      if (auto c = j.worker_of.find(l.pid); c != j.worker_of.end()) w.value(c->second); else w.null();
      w.end_object();
    }
    w.end_array();
    w.end_object();
  } else {
    w.null();
  }
  // The model's FLOPs (the agent's estimate) and what the job achieved with them.
  w.key("model_flops_per_step");
  if (agent && agent->model_flops_per_step > 0) w.value(agent->model_flops_per_step); else w.null();
  diagnose::Mfu m = mfu_of(agent);
  w.key("achieved_flops_per_s");
  if (m.achieved_tflops > 0) w.value(m.achieved_tflops * 1e12); else w.null();
  w.key("peak_flops_per_s");
  if (m.peak_tflops > 0) w.value(m.peak_tflops * 1e12); else w.null();
  w.key("mfu_pct");
  if (m.mfu_pct >= 0) w.value(m.mfu_pct); else w.null();
  w.field("mfu_note", m.note);
  w.end_object();
  return w.take();
}

std::string host_text(const JobInspection& j, const diagnose::AgentEvidence* agent) {
  std::string o;
  if (j.inspected) {
    auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + basename_of(x);
      return s.empty() ? std::string("none mapped") : s;
    };
    std::string blas;
    for (const auto& p : j.processes)
      for (const auto& r : p.runtimes)
        if (r.kind == "blas" && blas.find(r.vendor) == std::string::npos) blas += (blas.empty() ? "" : ", ") + r.vendor;
    // "at step 3", or the fallback's own words ("after 10 s without 3 steps").
    o += fmt::format("  host ({}{}): CPU {}, BLAS {}{}, OpenMP {}\n", j.trigger.rfind("step", 0) == 0 ? "at " : "", j.trigger,
                     j.cpu_vendor.empty() ? "unknown" : j.cpu_vendor, names(j.blas_libs),
                     blas.empty() ? "" : " (" + blas + ")", names(j.openmp_libs));
  } else if (!j.skipped.empty()) {
    o += "  host: " + j.skipped + "\n";
  }
  if (j.oversubscription && j.oversubscription->processes > 0) {
    const auto& ov = *j.oversubscription;
    o += fmt::format("  threads (live, {:.1f} s): {}\n", ov.window_s, ov.summary);
    for (const auto& l : ov.per_process) {
      int rank = -1;
      for (const auto& p : j.processes)
        if (p.pid == l.pid) rank = p.rank;
      auto w = j.worker_of.find(l.pid);
      o += fmt::format("    pid {}{}: {} thread{}, {:.1f} runnable, {:.2f} cores, OMP_NUM_THREADS={}\n", l.pid,
                       rank >= 0                   ? fmt::format(" (rank {})", rank)
                       : w != j.worker_of.end()    ? fmt::format(" (child of {})", w->second)
                                                   : std::string(),
                       l.threads, l.threads == 1 ? "" : "s", l.runnable_threads,
                       l.cpu_cores, l.omp_num_threads.empty() ? "unset" : l.omp_num_threads);
    }
  }
  if (agent && agent->model_flops_per_step > 0) {
    diagnose::Mfu m = mfu_of(agent);
    std::string tail;
    if (m.achieved_tflops > 0) tail += fmt::format(", achieved {:.3g} GFLOP/s", m.achieved_tflops * 1e3);
    if (m.mfu_pct >= 0) tail += fmt::format(", MFU {:.1f}% of {:.0f} TFLOP/s peak", m.mfu_pct, m.peak_tflops);
    else if (!m.note.empty()) tail += " (" + m.note + ")";
    o += fmt::format("  model FLOPs per step: {:.3g} GFLOP (agent estimate){}\n", agent->model_flops_per_step / 1e9, tail);
  }
  return o;
}

}  // namespace ts::run
