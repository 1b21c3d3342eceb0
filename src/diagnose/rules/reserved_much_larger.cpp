// reserved-much-larger: the caching allocator holds far more than the peak the tensors needed
// (the caching allocator holds freed blocks: PyTorch CUDA semantics,
// "Memory management"). Evidence: peak reserved > 1.5x peak allocated and >= 1 GiB more (trace or agent).
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> reserved_much_larger(const Evidence& ev) {
  double reserved = -1, allocated = -1;
  std::string source;
  if (ev.trace && ev.trace->memory.present && ev.trace->memory.peak_allocated > 0) {
    reserved = ev.trace->memory.peak_reserved;
    allocated = ev.trace->memory.peak_allocated;
    source = "trace";
  } else if (ev.agent && ev.agent->mem_peak_bytes > 0 && ev.agent->mem_reserved_bytes > 0) {
    reserved = ev.agent->mem_reserved_bytes;
    allocated = ev.agent->mem_peak_bytes;
    source = "agent";
  } else {
    return std::nullopt;
  }
  if (reserved < th::kReservedRatio * allocated || reserved - allocated < th::kReservedMinExtraBytes) return std::nullopt;
  Finding f = make("reserved-much-larger", Bottleneck::Memory, source);
  add(f, "peak_reserved_bytes", reserved, "bytes");
  add(f, "peak_allocated_bytes", allocated, "bytes");
  add(f, "reserved_over_allocated", reserved / allocated, "x");
  f.severity = Severity::Low;
  f.confidence = 0.8;
  f.recoverable_fraction = 0;
  f.title = fmt::format("Allocator holds {} reserved for a {} peak ({:.1f}x)", ts::human_bytes(reserved),
                        ts::human_bytes(allocated), reserved / allocated);
  f.gain = fmt::format("{} of GPU memory cached but unused", ts::human_bytes(reserved - allocated));
  f.explanation =
      "PyTorch's caching allocator keeps freed blocks to avoid asking CUDA again; that is normal. "
      "A large gap means phases with different footprints (training then evaluation on large "
      "batches) or fragmentation. Other processes on this GPU cannot use that memory.";
  f.fix = "Between phases (not inside the training loop) call torch.cuda.empty_cache(); against "
          "fragmentation set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
  f.fix_code =
      "evaluate(model)\n"
      "torch.cuda.empty_cache()   # once, between phases; never every step";
  return f;
}

}  // namespace ts::diagnose::rules
