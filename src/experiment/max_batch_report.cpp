// max-batch's terminal output and JSON: formatting only.
#include <fmt/format.h>

#include "experiment/max_batch.h"
#include "util/format.h"
#include "util/json_writer.h"

namespace ts::experiment {

std::string max_batch_text(const MaxBatchResult& r) {
  std::string out = fmt::format("Max batch: {}\n  {} on {} (torch {}), {} training step, capacity {}\n\n", r.target,
                                r.config, r.device_name, r.torch_version, r.config, human_bytes(r.capacity_bytes));
  out += fmt::format("  {:>8} {:>12}  {}\n", "batch", "peak", "result");
  for (auto& t : r.trials)
    out += fmt::format("  {:>8} {:>12}  {}\n", t.batch, human_bytes(t.peak_bytes), t.fits ? "fits" : t.why);
  out += "\n";
  if (r.cap_reached)
    out += fmt::format("  Every batch up to {} fits (the search's cap).\n", r.max_batch);
  else
    out += fmt::format("  Largest batch that fits: {} (batch {} does not).\n", r.max_batch, r.first_miss);
  out += fmt::format("  Memory: {} fixed (parameters {}, optimizer state {}) + {} per sample.\n",
                     human_bytes(r.fixed_bytes), human_bytes(r.param_bytes), human_bytes(r.optimizer_state_bytes),
                     human_bytes(r.bytes_per_sample));
  out += fmt::format("  Recommended batch: {} (leaves headroom for fragmentation and longer inputs).\n",
                     r.recommended_batch);
  if (r.leak_kind == "cuda_allocated")
    out += fmt::format("  After every out-of-memory: {} still allocated, CUDA context {}.\n", human_bytes(r.leak_bytes),
                       r.context_ok ? "healthy" : "BROKEN");
  return out;
}

std::string max_batch_json(const MaxBatchResult& r) {
  JsonWriter w;
  w.begin_object();
  w.field("kind", "max-batch").field("target", r.target).field("device", r.device).field("device_name", r.device_name);
  w.field("torch_version", r.torch_version).field("config", r.config).field("capacity_bytes", r.capacity_bytes);
  w.field("param_bytes", r.param_bytes).field("optimizer_state_bytes", r.optimizer_state_bytes);
  w.key("trials").begin_array();
  for (auto& t : r.trials)
    w.begin_object().field("batch", t.batch).field("fits", t.fits).field("peak_bytes", t.peak_bytes).field("why", t.why).end_object();
  w.end_array();
  w.field("max_batch", r.max_batch).field("first_miss", r.first_miss).field("cap_reached", r.cap_reached);
  w.field("bytes_per_sample", r.bytes_per_sample).field("fixed_bytes", r.fixed_bytes);
  w.field("recommended_batch", r.recommended_batch).field("leak_bytes", r.leak_bytes).field("leak_kind", r.leak_kind);
  w.field("context_ok", r.context_ok).field("search_s", r.search_s);
  w.end_object();
  return w.take() + "\n";
}

}  // namespace ts::experiment
