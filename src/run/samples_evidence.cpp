#include "run/samples_evidence.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ts::run {

diagnose::SamplesEvidence samples_evidence(const sample::Summary& s) {
  diagnose::SamplesEvidence e;
  e.duration_s = s.duration_s;
  e.gpus = s.gpus;
  e.nvml = s.nvml;
  e.gpu_util_mean_pct = s.gpu_util_mean_pct;
  e.gpu_util_p10_pct = s.gpu_util_p10_pct;
  e.gpu_util_p90_pct = s.gpu_util_p90_pct;
  e.sm_active_mean_pct = s.sm_active_mean_pct;
  e.tensor_active_mean_pct = s.tensor_active_mean_pct;
  e.gpu_pattern = s.gpu_pattern;
  e.sawtooth_period_ms = s.sawtooth_period_ms;
  e.sawtooth_duty_pct = s.sawtooth_duty_pct;
  e.gpu_mem_used_max_bytes = s.gpu_mem_used_max_bytes;
  e.gpu_mem_total_bytes = s.gpu_mem_total_bytes;
  e.temp_max_c = s.temp_max_c;
  e.power_mean_w = s.power_mean_w;
  e.throttle_reasons_seen = s.throttle_reasons_seen;
  e.throttled_pct = s.throttled_pct;
  e.cpu_cores = s.cpu_cores;
  e.cpu_budget_cores = s.cpu_budget_cores;
  e.host_cpu_mean_pct = s.host_cpu_mean_pct;
  e.process_tree_cpu_mean_pct = s.process_tree_cpu_mean_pct;
  e.process_tree_cpu_max_pct = s.process_tree_cpu_max_pct;
  e.process_tree_cpu_demand_max_pct = s.process_tree_cpu_demand_max_pct;
  e.process_count = s.process_count;
  e.nonvoluntary_switches_per_s = s.nonvoluntary_switches_per_s;
  e.threads_total = s.threads_total;
  e.shm_total_bytes = s.shm_total_bytes;
  e.shm_used_max_bytes = s.shm_used_max_bytes;
  return e;
}

bool steady_cpu(diagnose::SamplesEvidence& e, const sample::HostHistory& h, double t0_s, double t1_s,
                const std::vector<std::pair<double, double>>& unsteady) {
  if (!(t1_s > t0_s)) return false;
  double sum = 0, max = -1, demand = -1, sys = 0, minflt = 0;
  int n = 0, kn = 0;
  bool all_demand = true;
  for (size_t i = 1; i < h.tree_cpu.size(); ++i) {
    // A reading covers the time since the one before it: both ends inside the span.
    if (h.tree_cpu[i - 1].t_s < t0_s || h.tree_cpu[i].t_s > t1_s) continue;
    const double v = h.tree_cpu[i].v;
    sum += v, ++n, max = std::max(max, v);
    const double d = i < h.tree_demand.size() ? h.tree_demand[i].v : -1;
    if (d < 0) all_demand = false;
    demand = std::max(demand, d);
    const double a = h.tree_cpu[i - 1].t_s, b = h.tree_cpu[i].t_s;
    const bool quiet =
        std::none_of(unsteady.begin(), unsteady.end(), [&](const auto& u) { return a < u.second && b > u.first; });
    if (quiet && i < h.tree_sys.size() && i < h.tree_minflt.size())
      sys += h.tree_sys[i].v, minflt += h.tree_minflt[i].v, ++kn;
  }
  if (n < 2) return false;
  e.process_tree_cpu_mean_pct = sum / n;
  e.process_tree_cpu_max_pct = max;
  e.process_tree_cpu_demand_max_pct = all_demand ? demand : -1;
  // Pushed beside tree_cpu at every reading, so index i is the same reading.
  if (h.tree_sys.size() == h.tree_cpu.size() && kn >= 2) {
    e.process_tree_sys_mean_pct = sys / kn;
    e.process_tree_minflt_mean_per_s = minflt / kn;
  }
  // The host's mean over the same span: other work is the host's use less the job's.
  double hsum = 0;
  int hn = 0;
  for (size_t i = 0; i < h.cpu_busy.size(); ++i)
    if (h.cpu_busy[i].t_s > t0_s && h.cpu_busy[i].t_s <= t1_s) hsum += h.cpu_busy[i].v, ++hn;
  if (hn > 0) e.host_cpu_mean_pct = hsum / hn;
  e.cpu_window_s = t1_s - t0_s;
  return true;
}

std::string contention_warning(const diagnose::SamplesEvidence& e, int torch_threads) {
  const double others = e.other_work_cores();
  if (e.host_cpu_mean_pct < 80 || others < 0.5) return "";
  const double job = e.process_tree_cpu_mean_pct / 100;
  std::string w = fmt::format(
      "other processes kept {:.1f} of the host's {} cores busy while the job trained (the job used {:.1f}): its "
      "threads waited for cores, so the step times here are that busy host's and may be shorter on a free one",
      others, e.cpu_cores, job);
  // The cores the others leave, shared among the job's training processes (its DataLoader
  // workers are the loader rules' to size).
  const int free_each = std::max(1, static_cast<int>((e.cpu_cores - others) / e.training_processes() + 0.25));
  const long left = std::max(1L, std::lround(e.cpu_cores - others));
  if (torch_threads > free_each)
    w += fmt::format(
        ". While that work runs, {} intra-op threads per training process wait on each other at every parallel region "
        "for the {} core{} it leaves: torch.set_num_threads({}) (or --set threads={}) keeps them from it",
        torch_threads, left, left == 1 ? "" : "s", free_each, free_each);
  return w;
}

}  // namespace ts::run
