#include "reference_json.h"

#include "util/json_writer.h"

namespace ts::analysis::testing {

std::string reference_json(const TraceAnalysis& a) {
  JsonWriter w(true);
  w.begin_object();
  const auto& st = a.steps;
  w.field("steps", static_cast<int64_t>(st.steps.size()));
  w.field("dropped", st.dropped_tail_steps);
  w.field("synthetic", st.synthetic);
  w.field("total_ns", st.total_ns);
  for (size_t i = 0; i < st.steps.size(); ++i) {
    w.field("step_numbers." + std::to_string(i), st.steps[i].number);
    w.field("step_durations_ns." + std::to_string(i), st.steps[i].duration());
  }
  const Breakdown& b = st.total;
  const int64_t vals[] = {b.kernel, b.memcpy, b.memset, b.communication,
                          b.runtime, b.dataloader, b.cpu_exec, b.other};
  for (int i = 0; i < 8; ++i) w.field(std::string("breakdown_ns.") + kBreakdownClasses[i], vals[i]);
  for (int i = 0; i < 8; ++i) w.field(std::string("breakdown_pct.") + kBreakdownClasses[i], st.pct(vals[i]));
  w.field("dataloader_host_ns", st.dataloader_host_ns);
  w.field("gpu.present", a.gpu.present);
  if (a.gpu.present) {
    w.field("gpu.span_ns", a.gpu.span_ns);
    w.field("gpu.busy_ns", a.gpu.busy_ns);
    w.field("gpu.idle_ns", a.gpu.idle_ns);
    w.field("gpu.compute_ns", a.gpu.compute_ns);
    w.field("gpu.idle_host_wait_ns", a.gpu.idle_host_wait_ns);
    w.field("gpu.idle_kernel_wait_ns", a.gpu.idle_kernel_wait_ns);
    w.field("gpu.idle_other_ns", a.gpu.idle_other_ns);
    w.field("gpu.utilization_pct", a.gpu.utilization_pct);
  }
  const KernelStats& k = a.kernels;
  w.field("kernels.count", k.count);
  w.field("kernels.per_step", k.per_step);
  w.field("kernels.total_ns", k.total_ns);
  w.field("kernels.median_ns", k.median_ns);
  w.field("kernels.under_10us_pct", k.under_10us_pct);
  w.field("kernels.triton", k.triton_kernels);
  w.field("kernels.launches", k.launch.launches);
  w.field("kernels.median_launch_delay_ns", k.launch.median_launch_delay_ns);
  w.field("kernels.short_kernels", k.launch.short_kernels);
  w.field("kernels.runtime_outliers", k.launch.runtime_outliers);
  for (size_t i = 0; i < k.top.size() && i < 3; ++i) {
    w.field("kernels.top." + std::to_string(i) + ".count", k.top[i].count);
    w.field("kernels.top." + std::to_string(i) + ".total_ns", k.top[i].total_ns);
  }
  for (const CopyRow& r : a.copies.rows) {
    const std::string p = "copies." + r.direction + "/" + r.kind;
    w.field(p + ".count", r.count);
    w.field(p + ".bytes", r.bytes);
    w.field(p + ".time_ns", r.time_ns);
  }
  w.field("copies.blocking_memcpy_calls", a.copies.blocking_memcpy_calls);
  w.field("syncs.count", a.syncs.count);
  w.field("syncs.time_ns", a.syncs.time_ns);
  w.field("syncs.item_calls", a.syncs.item_calls);
  w.field("syncs.pct_of_step", a.syncs.pct_of_step);
  for (const SyncRow& r : a.syncs.rows) {
    w.field("syncs.rows." + r.kind + ".count", r.count);
    w.field("syncs.rows." + r.kind + ".time_ns", r.time_ns);
  }
  w.field("memory.present", a.memory.present);
  if (a.memory.present) {
    w.field("memory.relative", a.memory.relative);
    w.field("memory.device", a.memory.device);
    w.field("memory.peak_allocated", a.memory.peak_allocated);
    w.field("memory.peak_reserved", a.memory.peak_reserved);
    w.field("memory.slope", a.memory.slope_bytes_per_step);
    for (size_t i = 0; i < a.memory.allocated_at_step_end.size(); ++i)
      if (a.memory.allocated_at_step_end[i] >= 0 || a.memory.relative)
        w.field("memory.at_step_end." + std::to_string(i), a.memory.allocated_at_step_end[i]);
  }
  w.field("comm.comm_kernels", a.parallel.comm_kernels);
  w.field("comm.comm_time_ns", a.parallel.comm_time_ns);
  w.field("comm.comm_pct_of_gpu", a.parallel.comm_pct_of_gpu);
  w.field("comm.comm_overlap_pct", a.parallel.comm_overlap_pct);
  w.field("comm.comm_pct_of_step", a.parallel.comm_pct_of_step);
  w.end_object();
  return w.take();
}

}  // namespace ts::analysis::testing
