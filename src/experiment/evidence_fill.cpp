#include "experiment/evidence_fill.h"

namespace ts::experiment {

diagnose::LabEvidence lab_evidence(const LabResult& r) {
  diagnose::LabEvidence ev;
  ev.device = r.device;
  for (auto& c : r.configs) {
    diagnose::LabEvidence::Config k;
    k.name = c.name;
    // A configuration that failed did not measure anything either: to a rule it is skipped, with the why.
    k.skipped = !c.ok();
    k.skip_reason = c.ok() ? "" : (c.status == "error" ? "failed: " : "") + c.reason;
    k.samples_per_s = c.samples_per_s;
    k.spread_pct = c.spread_pct;
    k.peak_mem_bytes = c.peak_mem_bytes;
    k.data_wait_pct = c.data_wait_pct;
    ev.configs.push_back(std::move(k));
  }
  return ev;
}

diagnose::LoaderSweepEvidence loader_evidence(const LoaderResult& r) {
  diagnose::LoaderSweepEvidence ev;
  for (auto& p : r.points) {
    if (!p.ok()) continue;
    diagnose::LoaderSweepEvidence::Point q;
    q.num_workers = p.num_workers;
    q.pin_memory = p.pin_memory;
    q.prefetch_factor = p.prefetch_factor;
    q.persistent_workers = p.persistent_workers;
    q.batches_per_s = p.batches_per_s;
    q.first_batch_ms = p.first_batch_ms;
    ev.points.push_back(q);
  }
  ev.getitem_ms = r.getitem_ms;
  ev.collate_ms = r.collate_ms;
  ev.recommended_workers = r.recommended >= 0 ? r.points[size_t(r.recommended)].num_workers : -1;
  ev.gpu_step_ms = r.gpu_step_ms;
  return ev;
}

}  // namespace ts::experiment
