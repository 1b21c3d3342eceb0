// The loader sweep's terminal table and JSON: formatting only.
#include <fmt/format.h>

#include "experiment/findings_text.h"
#include "experiment/loader_sweep.h"
#include "util/format.h"
#include "util/json_writer.h"

namespace ts::experiment {

std::string loader_text(const LoaderResult& r) {
  std::string out = fmt::format("DataLoader sweep: {}\n  batch size {}, {} usable cores{}\n", r.target, r.batch_size,
                                r.cores, r.cuda ? ", CUDA available" : ", no CUDA (pin_memory not swept)");
  if (r.getitem_ms >= 0)
    out += fmt::format("  __getitem__ {:.2f} ms per sample, collate {:.2f} ms per batch -> {:.1f} ms to build a "
                       "batch in one process\n",
                       r.getitem_ms, r.collate_ms, r.getitem_ms * double(r.batch_size) + std::max(0.0, r.collate_ms));
  out += "\n";
  bool idle = r.gpu_step_ms > 0;
  out += fmt::format("  {:<48} {:>10} {:>9} {:>12} {:>11}{}\n", "setting", "batches/s", "ms/batch", "first batch",
                     "new epoch", idle ? fmt::format(" {:>9}", "GPU idle") : "");
  for (size_t i = 0; i < r.points.size(); ++i) {
    auto& p = r.points[i];
    std::string mark = int(i) == r.recommended ? " <- recommended" : "";
    if (!p.ok()) {
      out += fmt::format("  {:<48} {}: {}\n", p.label(), p.status, p.reason);
      continue;
    }
    out += fmt::format("  {:<48} {:>10.1f} {:>9.1f} {:>9.0f} ms {:>8.0f} ms{}{}\n", p.label(), p.batches_per_s,
                       p.batch_ms_median, p.first_batch_ms, p.restart_ms, idle ? fmt::format(" {:>8.0f}%", p.predicted_gpu_idle_pct) : "",
                       mark);
  }
  if (r.recommended >= 0) {
    auto& p = r.points[size_t(r.recommended)];
    out += fmt::format("\nRecommended: DataLoader({}{}{}{}) - {}.\n", fmt::format("num_workers={}", p.num_workers),
                       p.pin_memory ? ", pin_memory=True" : "",
                       p.num_workers > 0 && p.prefetch_factor != 2 ? fmt::format(", prefetch_factor={}", p.prefetch_factor) : "",
                       p.persistent_workers ? ", persistent_workers=True" : "", r.why);
    if (idle)
      out += fmt::format("With a {:.1f} ms GPU step the GPU would idle {:.0f}% (num_workers=0: {:.0f}%).\n", r.gpu_step_ms,
                         p.predicted_gpu_idle_pct, r.points.front().predicted_gpu_idle_pct);
  }
  for (auto& w : r.warnings) out += fmt::format("warning: {}\n", w);
  out += findings_text(r.findings);
  return out;
}

std::string loader_json(const LoaderResult& r) {
  JsonWriter w;
  w.begin_object();
  w.field("kind", "loader").field("target", r.target).field("batch_size", r.batch_size);
  w.field("dataset_batches", r.dataset_batches).field("batch_bytes", r.batch_bytes);
  w.field("getitem_ms", r.getitem_ms).field("collate_ms", r.collate_ms).field("cuda", r.cuda).field("cores", r.cores);
  w.field("gpu_step_ms", r.gpu_step_ms);
  w.key("points").begin_array();
  for (auto& p : r.points) {
    w.begin_object();
    w.field("num_workers", p.num_workers).field("pin_memory", p.pin_memory).field("prefetch_factor", p.prefetch_factor);
    w.field("persistent_workers", p.persistent_workers).field("status", p.status);
    if (!p.reason.empty()) w.field("reason", p.reason);
    w.field("batches_per_s", p.batches_per_s).field("batch_ms_median", p.batch_ms_median);
    w.field("first_batch_ms", p.first_batch_ms).field("restart_ms", p.restart_ms);
    w.field("epoch_batches_per_s", p.epoch_batches_per_s).field("predicted_gpu_idle_pct", p.predicted_gpu_idle_pct);
    w.field("wall_s", p.wall_s);
    w.end_object();
  }
  w.end_array();
  w.field("best", r.best).field("recommended", r.recommended).field("why", r.why);
  w.field("shm_total_bytes", r.shm_total_bytes).field("shm_free_bytes", r.shm_free_bytes);
  w.field("shm_needed_bytes", r.shm_needed_bytes);
  w.array("warnings", r.warnings);
  findings_json(w, r.findings);
  w.end_object();
  return w.take() + "\n";
}

}  // namespace ts::experiment
