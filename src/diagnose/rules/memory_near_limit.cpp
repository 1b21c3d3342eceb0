// memory-near-limit: the job uses > 90% of the GPU's memory (TB plugin: peak memory > 90% of
// device memory -> checkpointing / AMP). One more large batch or a fragmentation spike and it
// runs out. Evidence: trace peak reserved vs deviceProperties; agent reserved vs device total;
// sampled memory used vs total.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> memory_near_limit(const Evidence& ev) {
  double used = -1, total = -1;
  std::string source;
  if (ev.trace && ev.trace->memory.present && ev.trace->memory.device_total > 0 && ev.trace->memory.peak_reserved > 0) {
    used = ev.trace->memory.peak_reserved;
    total = ev.trace->memory.device_total;
    source = "trace";
  } else if (ev.agent && ev.agent->device_mem_total_bytes > 0 && ev.agent->mem_reserved_bytes > 0) {
    used = ev.agent->mem_reserved_bytes;
    total = ev.agent->device_mem_total_bytes;
    source = "agent";
  } else if (ev.samples && ev.samples->gpu_mem_total_bytes > 0 && ev.samples->gpu_mem_used_max_bytes >= 0) {
    used = ev.samples->gpu_mem_used_max_bytes;
    total = ev.samples->gpu_mem_total_bytes;
    source = "samples";
  } else {
    return std::nullopt;
  }
  double pct = 100 * used / total;
  if (pct < th::kNearLimitPct) return std::nullopt;
  Finding f = make("memory-near-limit", Bottleneck::Memory, source);
  add(f, "peak_used_bytes", used, "bytes");
  add(f, "device_total_bytes", total, "bytes");
  add(f, "peak_used_pct", pct, "%");
  f.severity = Severity::Medium;
  f.confidence = 0.85;
  f.recoverable_fraction = 0;
  f.title = fmt::format("Memory near the limit: {:.0f}% of {} at peak", pct, ts::human_bytes(total));
  f.gain = "headroom against out-of-memory; freed memory can hold a larger batch";
  f.explanation =
      "The peak memory is close to the device's capacity. A longer sequence, a different batch or "
      "allocator fragmentation can push it over, and the caching allocator starts to free and "
      "re-request blocks (cudaFree/cudaMalloc), which synchronises the device.";
  f.fix = "Halve activation memory with bf16 autocast or activation checkpointing; or a smaller "
          "batch with gradient accumulation; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
          "against fragmentation.";
  f.fix_code =
      "from torch.utils.checkpoint import checkpoint\n"
      "x = checkpoint(block, x, use_reentrant=False)   # recompute activations in backward\n"
      "# or: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  return f;
}

}  // namespace ts::diagnose::rules
