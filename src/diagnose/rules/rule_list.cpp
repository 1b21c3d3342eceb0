// The rules, in a fixed order (the order only breaks ties in ranking). Adding a rule: one file
// in this folder, one declaration in rule.h, one line here, one section in docs/FINDINGS.md.
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

const std::vector<RuleEntry>& all_rules() {
  static const std::vector<RuleEntry> rules = {
      {"job-failed", job_failed},
      {"no-training-step", no_training_step},
      {"not-on-gpu", not_on_gpu},
      {"warm-up", warm_up},
      {"dataloader-starvation", dataloader_starvation},
      {"cpu-bound-transforms", cpu_bound_transforms},
      {"host-sync", host_sync},
      {"pageable-memcpy", pageable_memcpy},
      {"launch-bound", launch_bound},
      {"fp32-gemm", fp32_gemm},
      {"tensor-core-shapes", tensor_core_shapes},
      {"few-ops-dominate", few_ops_dominate},
      {"memory-growth", memory_growth},
      {"memory-near-limit", memory_near_limit},
      {"reserved-much-larger", reserved_much_larger},
      {"batch-too-small", batch_too_small},
      {"in-loop-io", in_loop_io},
      {"periodic-evaluation", periodic_evaluation},
      {"compile-cost", compile_cost},
      {"slow-start", slow_start},
      {"worker-restarts", worker_restarts},
      {"anomaly-detection", anomaly_detection},
      {"unfused-optimizer", unfused_optimizer},
      {"gpu-throttling", gpu_throttling},
      {"thread-oversubscription", thread_oversubscription},
      {"page-fault-churn", page_fault_churn},
      {"openblas-on-intel", openblas_on_intel},
      {"data-parallel", data_parallel},
      {"old-pytorch-on-ampere", old_pytorch_on_ampere},
      {"communication-bound", communication_bound},
      {"straggler-rank", straggler_rank},
      {"node-mismatch", node_mismatch},
      {"nonfinite-loss", nonfinite_loss},
      {"gpu-idle", gpu_idle},
      {"compute-bound", compute_bound},
  };
  return rules;
}

}  // namespace ts::diagnose::rules
