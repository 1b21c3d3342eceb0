#include "run/samples_evidence.h"

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

}  // namespace ts::run
