// batch-too-small: the GPU is mostly idle yet its memory is mostly free, and the data pipeline is
// not the cause: each step has too little work (TB plugin: GPU utilization < 50% -> larger batch;
// memory not fully used -> larger batch, scale the learning rate linearly).
// Evidence: GPU utilisation < 50% (trace or samples), peak memory < 50% of the device (trace,
// agent or samples), data wait < 5% of the step when it is known.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> batch_too_small(const Evidence& ev) {
  Util util = gpu_util(ev);
  if (util.pct < 0 || util.pct >= th::kBatchGpuUtilPct) return std::nullopt;
  double wait = data_wait_pct(ev);
  if (wait >= th::kDataWaitPct) return std::nullopt;  // the loader is the cause: dataloader-starvation
  if (cpu_saturated(ev)) return std::nullopt;
  double mem_pct = -1;
  if (ev.trace && ev.trace->memory.present && ev.trace->memory.device_total > 0 && ev.trace->memory.peak_reserved > 0)
    mem_pct = 100.0 * ev.trace->memory.peak_reserved / ev.trace->memory.device_total;
  else if (ev.agent && ev.agent->device_mem_total_bytes > 0 && ev.agent->mem_reserved_bytes > 0)
    mem_pct = 100.0 * ev.agent->mem_reserved_bytes / ev.agent->device_mem_total_bytes;
  else if (ev.samples && ev.samples->gpu_mem_total_bytes > 0 && ev.samples->gpu_mem_used_max_bytes >= 0)
    mem_pct = 100.0 * ev.samples->gpu_mem_used_max_bytes / ev.samples->gpu_mem_total_bytes;
  if (mem_pct < 0 || mem_pct >= th::kBatchMemPct) return std::nullopt;
  Finding f = make("batch-too-small", Bottleneck::Compute, util.source);
  add(f, "gpu_util_pct", util.pct, "%");
  add(f, "peak_memory_pct", mem_pct, "%");
  if (wait >= 0) add(f, "data_wait_pct", wait, "%");
  int64_t bs = ev.agent && !ev.agent->loaders.empty() ? ev.agent->loaders[0].batch_size : -1;
  if (bs > 0) add(f, "batch_size", bs, "count");
  // Doubling the batch roughly doubles the work per launch and per step overhead: about half the
  // idle time comes back per sample. An estimate: confidence stays moderate.
  f.recoverable_fraction = std::clamp((100 - util.pct) / 100 * 0.5, 0.0, 0.5);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = 0.55;
  f.title = fmt::format("Batch too small for this GPU: {:.0f}% busy, {:.0f}% of memory used", util.pct, mem_pct);
  f.gain = fmt::format("more work per step amortises the per-step overhead: about {} per sample",
                       gain_text(f.recoverable_fraction));
  f.explanation =
      "The GPU is idle most of the step and most of its memory is free, and the DataLoader is not "
      "what it waits for: each step simply holds too little work to fill the GPU, so fixed "
      "per-step costs (launches, Python, the optimizer) dominate. A larger batch uses the free "
      "memory for more samples per step.";
  std::string next = bs > 0 ? std::to_string(bs * 2) : "2 * BS";
  f.fix = "Raise the batch size (doubling it roughly doubles the memory for activations) and scale "
          "the learning rate with it (linear scaling rule: K times the batch, K times the LR, with warm-up).";
  f.fix_code = fmt::format(
      "loader = DataLoader(dataset, batch_size={}, ...)\n"
      "opt = torch.optim.AdamW(model.parameters(), lr=base_lr * {} / {})",
      next, next, bs > 0 ? std::to_string(bs) : "BS");
  point_at_fix(f, ev, "dataloader", "batch_size here", KnobFix{{{"per_device_train_batch_size", ""}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
