#include <algorithm>
#include <cstdio>

#include "diagnose/rules/rule.h"
#include "util/shell_words.h"

namespace ts::diagnose::rules {

Finding make(const char* id, Bottleneck b, const std::string& source) {
  Finding f;
  f.id = id;
  f.bottleneck = b;
  f.source = source;
  return f;
}

double lab_rate(const LabEvidence& lab, const std::string& name) {
  for (const auto& c : lab.configs)
    if (c.name == name && !c.skipped) return c.samples_per_s;
  return -1;
}

void add(Finding& f, const std::string& name, double value, const std::string& unit) {
  f.evidence.push_back({name, value, unit});
}

Severity severity_for(double r) {
  if (r >= 0.25) return Severity::High;
  if (r >= 0.10) return Severity::Medium;
  if (r >= 0.02) return Severity::Low;
  return Severity::Info;
}

const analysis::IdleAttribution* idle_attribution(const Evidence& ev) {
  if (!ev.trace || !ev.trace->gpu.attribution.present || ev.trace->gpu.attribution.idle_ns <= 0) return nullptr;
  return &ev.trace->gpu.attribution;
}

const analysis::IdleEntry* top_idle_entry(const analysis::IdleAttribution& a, analysis::IdleCause c) {
  for (const auto& e : a.entries)  // largest first
    if (e.cause == c) return &e;
  return nullptr;
}

std::string idle_where(const analysis::IdleEntry& e) {
  std::string s = e.host_event;
  if (!e.op.empty()) s += " in " + e.op;
  if (!e.annotation.empty()) s += " (" + e.annotation + ")";
  if (!e.frame.empty()) s += " at " + e.frame;
  return s;
}

const analysis::TraceAnalysis* trace_with_steps(const Evidence& ev) {
  if (!ev.trace || ev.trace->steps.total_ns <= 0) return nullptr;
  return &*ev.trace;
}

double trace_step_pct(const Evidence& ev, int64_t analysis::Breakdown::*cls) {
  const auto* t = trace_with_steps(ev);
  if (!t) return -1;
  return t->steps.pct(t->steps.total.*cls);
}

double trace_step_ms(const Evidence& ev) {
  const auto* t = trace_with_steps(ev);
  if (!t) return -1;
  int64_t ns = t->steps.median_step_ns > 0 ? t->steps.median_step_ns : t->steps.total_ns;
  return ns / 1e6;
}

Util gpu_util(const Evidence& ev) {
  if (ev.trace && ev.trace->gpu.present) {
    const auto& g = ev.trace->gpu;
    double u = g.utilization_pct > 0 ? g.utilization_pct : 100.0 - g.idle_pct;
    return {std::clamp(u, 0.0, 100.0), "trace"};
  }
  if (ev.samples && ev.samples->nvml && ev.samples->gpu_util_mean_pct >= 0)
    return {ev.samples->gpu_util_mean_pct, "samples"};
  return {};
}

double usable_cores(const Evidence& ev) {
  if (!ev.samples) return 0;
  const auto& s = *ev.samples;
  if (s.threads_measured && s.thread_budget_cores > 0) return s.thread_budget_cores;
  if (s.cpu_budget_cores > 0) return s.cpu_budget_cores;
  return s.cpu_cores;
}

int training_processes_here(const Evidence& ev) { return ev.samples ? ev.samples->training_processes() : 1; }

int cores_per_training_process(const Evidence& ev) {
  const double cores = usable_cores(ev);
  if (cores <= 0) return 0;
  return std::max(1, static_cast<int>(cores / training_processes_here(ev)));
}

double other_work_cores(const Evidence& ev) { return ev.samples ? ev.samples->other_work_cores() : 0; }

double cpu_busy_pct_of_budget(const Evidence& ev) {
  if (!ev.samples) return -1;
  const auto& s = *ev.samples;
  // The job's own processes decide when they were measured: a host kept busy by other work is
  // contention, not CPU-bound transforms, and more workers would not be the job's fault. The
  // whole host speaks only when no process tree is known (watch without --pid, samples alone).
  // The tree's peak (each sample averages a slow tick, 0.5 s) rather than its mean: the mean of a
  // short run is diluted by the single-threaded start-up (imports, model build) before loading.
  // Demand (CPU used + waiting on a run queue) rather than use alone: on a host shared with other
  // work the job gets less CPU than it wants, and its loaders queue for cores that more workers
  // could not add. Sleeping loaders (I/O, a remote store) neither use nor wait: not saturated.
  double budget = usable_cores(ev);
  double tree = std::max({s.process_tree_cpu_mean_pct, s.process_tree_cpu_max_pct, s.process_tree_cpu_demand_max_pct});
  // Demand can exceed the budget (several processes queue at once): 100% means no core to spare.
  if (s.process_tree_cpu_mean_pct >= 0 && budget > 0) return std::min(100.0, tree / budget);
  return s.host_cpu_mean_pct >= 0 ? s.host_cpu_mean_pct : -1;
}

bool cpu_saturated(const Evidence& ev) {
  return cpu_busy_pct_of_budget(ev) >= th::kCpuSaturatedPct;
}

bool agent_without_cuda(const Evidence& ev) { return ev.agent && !ev.agent->cuda_available; }

std::string job_command(const Evidence& ev, const std::string& unknown) {
  return ev.job && !ev.job->command.empty() ? shell_join(ev.job->command) : unknown;
}

bool cpu_only_run(const Evidence& ev) { return agent_without_cuda(ev) || (ev.trace && !ev.trace->gpu.present); }

const AgentEvidence* agent_steps(const Evidence& ev) {
  if (!ev.agent || ev.agent->steps < th::kMinAgentSteps || ev.agent->step_ms <= 0) return nullptr;
  return &*ev.agent;
}

double data_wait_pct(const Evidence& ev) {
  if (const auto* a = agent_steps(ev)) return a->data_wait_pct;
  return trace_step_pct(ev, &analysis::Breakdown::dataloader);
}

std::string device_name(const Evidence& ev) {
  if (ev.trace && !ev.trace->device_name.empty()) return ev.trace->device_name;
  if (ev.agent && !ev.agent->device_name.empty()) return ev.agent->device_name;
  return "";
}

int compute_capability(const Evidence& ev) {
  if (ev.trace && ev.trace->precision.compute_capability > 0) return ev.trace->precision.compute_capability;
  if (ev.agent && ev.agent->device_capability > 0) return ev.agent->device_capability;
  return 0;
}

std::pair<int, int> torch_version(const std::string& v) {
  int a = 0, b = 0;
  if (std::sscanf(v.c_str(), "%d.%d", &a, &b) != 2) return {0, 0};
  return {a, b};
}

double loading_cpu_share(const Evidence& ev) { return ev.agent ? ev.agent->loading_cpu_share : -1; }

bool loading_waits(const Evidence& ev) {
  const double s = loading_cpu_share(ev);
  return s >= 0 && s < th::kLoadingWaitsCpuShare;
}

bool loading_computes(const Evidence& ev) { return loading_cpu_share(ev) >= th::kLoadingWaitsCpuShare; }

namespace {
// One loop's CPU per step outside its loading (loader_model.h, loop_cpu_ms): the training
// process's CPU clock per steady step, less the loading it did itself (num_workers=0) or its part
// of the workers' hand-over. 0 where one loop runs or its CPU clock was not read.
double loop_cpu_ms(const AgentEvidence& a, const LoaderModelInput& in) {
  if (in.loops < 2 || a.process_cpu_ms <= 0) return 0;
  const double loading = in.current_workers == 0 ? loading_cpu_ms(in) : handover_ms(in);
  return std::max(a.process_cpu_ms - loading, 0.01);
}
}  // namespace

std::optional<LoaderModelInput> agent_loader_model(const Evidence& ev, double consumer_ms) {
  const AgentEvidence* a = agent_steps(ev);
  if (!a || a->loaders.empty() || consumer_ms <= 0) return std::nullopt;
  const int64_t bs = a->loaders[0].batch_size;
  if (a->sample_getitem_ms < 0 || bs <= 0) return std::nullopt;
  const int workers = std::max(0, a->loaders[0].num_workers);
  const bool no_gpu = cpu_only_run(ev);
  LoaderModelInput in;
  in.step_ms = a->step_mean_ms > 0 ? a->step_mean_ms : a->step_ms;
  in.compute_ms = consumer_ms;
  in.load_ms = a->sample_getitem_ms * bs + std::max(0.0, a->collate_ms);
  in.cpu_share = a->loading_cpu_share;
  // The host's usable cores: the CPU-bound step shares them among the runnable processes
  // (cores_left); whether workers may take cores from a fitted loop is decided per training
  // process (fitted_loop_plan).
  in.cores = static_cast<int>(usable_cores(ev));
  in.current_workers = workers;
  // The ranks on this host share its cores, each with its own loader (loader_model.h, loops).
  in.loops = training_processes_here(ev);
  in.pinned = !no_gpu;  // the fix pins batches bound for a GPU (pin_memory=True)
  if (a->gpu_ms <= 0 && no_gpu) {
    // The loop computes on the CPU: its threads and the workers share the cores with whatever
    // else ran on them (the CPU bound), and loading that computes, measured in the loop, ran
    // beside nothing of the loop's: the workers will take cores from its threads (fitted).
    in.loop_threads = std::max(1, a->torch_threads);
    in.other_cores = other_work_cores(ev);
    in.fit_threads = workers == 0 && !loading_waits(ev);
  }
  if (a->batch_bytes > 0) in.batch_mib = a->batch_bytes / 1048576.0;
  if (in.batch_mib > 0 && ev.samples && ev.samples->shm_fault_ms_per_mib > 0)
    in.worker_ms_per_mib = ev.samples->shm_fault_ms_per_mib;  // this host's, when measured
  if (in.loop_threads > 0) in.loop_cpu_ms = loop_cpu_ms(*a, in);
  return in;
}

std::optional<LoaderPlan> fitted_loop_plan(const Evidence& ev) {
  const AgentEvidence* a = agent_steps(ev);
  if (!a || !agent_without_cuda(ev) || a->loaders.empty() || a->loaders[0].num_workers != 0 || cores_per_training_process(ev) < 2 ||
      a->data_wait_pct < th::kDataWaitPct)
    return std::nullopt;
  const double step = a->step_mean_ms > 0 ? a->step_mean_ms : a->step_ms;
  const auto in = agent_loader_model(ev, a->compute_ms > 0 ? a->compute_ms : step * (1 - a->data_wait_pct / 100));
  // Whether the threads are fitted (no CUDA-event times, loading that computes) is the model's.
  if (!in || !in->fit_threads) return std::nullopt;
  return plan_workers(*in);
}

}  // namespace ts::diagnose::rules
