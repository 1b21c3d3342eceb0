// The JSON report: schema "trainscope.report/2", documented field by field in docs/SCHEMA.md.
// Times in ms (floats), sizes in bytes, percentages 0-100. Keys are only added, never renamed.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/finding.h"
#include "report/report.h"
#include "util/json_writer.h"

namespace ts::report {
namespace {

double ms(double ns) { return ns / 1e6; }

const char* format_name(trace::TraceFormat f) {
  switch (f) {
    case trace::TraceFormat::Kineto: return "kineto";
    case trace::TraceFormat::Kineto2021: return "kineto-2021";
    case trace::TraceFormat::BareArray: return "bare-array";
  }
  return "unknown";
}

void breakdown_obj(JsonWriter& w, const analysis::Breakdown& b, double scale) {
  const int64_t vals[] = {b.kernel, b.memcpy, b.memset, b.communication, b.runtime, b.dataloader, b.cpu_exec, b.other};
  w.begin_object();
  for (int i = 0; i < 8; ++i) w.field(analysis::kBreakdownClasses[i], vals[i] * scale);
  w.end_object();
}

void bound_obj(JsonWriter& w, const int64_t (&ns)[analysis::kBoundClasses], double scale) {
  w.begin_object();
  for (int c = 0; c < analysis::kBoundClasses; ++c) w.field(analysis::kBoundClassNames[c], ns[c] * scale);
  w.end_object();
}

void bound_section(JsonWriter& w, const analysis::BoundSummary& b, int64_t total_ns) {
  w.key("bound").begin_object();
  w.field("present", b.present);
  w.key("bound_by");
  if (b.bound_by >= 0) w.value(analysis::kBoundClassNames[b.bound_by]); else w.null();
  w.key("ms");
  bound_obj(w, b.total_ns, 1e-6);
  w.key("pct");
  bound_obj(w, b.total_ns, total_ns > 0 ? 100.0 / total_ns : 0.0);
  w.key("steps_by_label").begin_object();
  for (int c = 0; c < analysis::kBoundClasses; ++c) w.field(analysis::kBoundClassNames[c], b.steps_by_label[c]);
  w.end_object();
  w.end_object();
}

void collectives_section(JsonWriter& w, const analysis::CollectiveStats& c, int64_t step_total_ns) {
  w.key("collectives").begin_object();
  w.field("count", c.count);
  w.field("with_params", c.with_params);
  w.field("time_ms", ms(c.time_ns));
  w.field("exposed_ms", ms(c.exposed_ns));
  w.field("exposed_pct_of_step", step_total_ns > 0 ? 100.0 * c.exposed_ns / step_total_ns : 0.0);
  w.key("rows").begin_array();
  for (const auto& r : c.rows) {
    w.begin_object().field("name", r.name).field("dtype", r.dtype).field("group_size", r.group_size);
    w.field("count", r.count);
    w.key("bytes");
    if (r.bytes >= 0) w.value(r.bytes); else w.null();
    w.field("time_ms", ms(r.time_ns)).field("exposed_ms", ms(r.exposed_ns));
    w.field("algbw_gbps", r.algbw_gbps).field("busbw_gbps", r.busbw_gbps);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// The GPU timeline per step, run-length encoded: [bins, busy_pct, entry] per run.
void timeline_section(JsonWriter& w, const analysis::GpuTimeline& tl, int64_t t0) {
  w.key("timeline").begin_object();
  w.field("bins", tl.bins);
  w.field("steps_total", tl.steps_total);
  w.key("steps").begin_array();
  for (const auto& st : tl.steps) {
    w.begin_object().field("number", st.number).field("start_ms", ms(st.start_ns - t0)).field("duration_ms", ms(st.duration_ns));
    w.key("runs").begin_array();
    for (const auto& r : st.runs) w.begin_array().value(r.bins).value(r.busy_pct).value(r.entry).end_array();
    w.end_array().end_object();
  }
  w.end_array();
  w.end_object();
}

void finding_obj(JsonWriter& w, const diagnose::Finding& f) {
  w.begin_object();
  w.field("id", f.id);
  w.field("severity", diagnose::severity_name(f.severity));
  w.field("confidence", f.confidence);
  w.field("bottleneck", diagnose::bottleneck_name(f.bottleneck));
  w.field("title", f.title);
  w.field("source", f.source);
  w.key("evidence").begin_array();
  for (const auto& e : f.evidence) {
    w.begin_object().field("name", e.name).field("value", e.value).field("unit", e.unit).end_object();
  }
  w.end_array();
  w.field("explanation", f.explanation);
  w.field("fix", f.fix);
  w.field("fix_code", f.fix_code);
  w.field("recoverable_fraction", f.recoverable_fraction);
  w.field("recoverable_pct", 100 * f.recoverable_fraction);
  w.field("gain", f.gain);
  w.field("predicted_speedup", diagnose::speedup(f.recoverable_fraction));
  // The step's account (docs/FINDINGS.md): ms per step this fix removes that no other finding claims.
  if (f.claimed_ms >= 0) {
    w.field("claimed_ms_per_step", f.claimed_ms);
    w.field("step_ms", f.step_ms);
  }
  w.field("own_recoverable_fraction", f.own_fraction);
  w.key("run_fraction");
  if (f.run_fraction >= 0) w.value(f.run_fraction); else w.null();
  w.field("outside_step", f.outside_step);
  w.key("fix_settings").begin_object();
  for (const auto& [k, v] : f.fix_settings) w.field(k, v);
  w.end_object();
  w.key("sites").begin_array();
  for (const auto& s : f.sites) {
    w.begin_object()
        .field("role", s.role)
        .field("path", s.path)
        .field("file", s.file)
        .field("line", s.line)
        .field("function", s.function)
        .field("code", s.code)
        .field("note", s.note);
    w.key("caller");
    if (s.caller_line > 0)
      w.begin_object()
          .field("path", s.caller_path)
          .field("line", s.caller_line)
          .field("function", s.caller_function)
          .field("code", s.caller_code)
          .end_object();
    else
      w.null();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void trace_obj(JsonWriter& w, const analysis::TraceAnalysis& t, int top) {
  w.begin_object();
  w.field("path", t.path);
  w.field("format", format_name(t.format));
  w.field("events", t.events);
  w.field("bytes", t.bytes);
  w.field("read_seconds", t.read_seconds);
  w.field("analyse_seconds", t.analyse_seconds);
  w.field("device_name", t.device_name);
  w.array("warnings", t.warnings);

  const auto& st = t.steps;
  w.key("steps").begin_object();
  w.field("count", static_cast<int64_t>(st.steps.size()));
  w.field("dropped_tail_steps", st.dropped_tail_steps);
  w.field("synthetic", st.synthetic);
  w.field("total_ms", ms(st.total_ns));
  w.field("median_ms", ms(st.median_step_ns));
  w.field("mean_ms", ms(st.mean_step_ns));
  w.field("p90_ms", ms(st.p90_step_ns));
  w.field("dataloader_host_ms", ms(st.dataloader_host_ns));
  w.field("dataloader_host_pct", st.pct(st.dataloader_host_ns));
  w.key("items").begin_array();
  int64_t t0 = st.steps.empty() ? 0 : st.steps.front().start_ns;
  for (const auto& s : st.steps) {
    w.begin_object();
    w.field("number", s.number);
    w.field("start_ms", ms(s.start_ns - t0));
    w.field("duration_ms", ms(s.duration()));
    w.key("breakdown_ms");
    breakdown_obj(w, s.breakdown, 1e-6);
    w.field("kernels", s.kernels);
    w.field("gpu_busy_pct", s.duration() > 0 ? 100.0 * s.gpu_busy_ns / s.duration() : 0.0);
    w.field("syncs", s.syncs);
    if (s.mem_allocated_end >= 0)
      w.field("mem_allocated_bytes", s.mem_allocated_end);
    else
      w.key("mem_allocated_bytes").null();
    if (s.bound_by >= 0) {
      w.field("bound_by", analysis::kBoundClassNames[s.bound_by]);
      w.key("bound_ms");
      bound_obj(w, s.bound_ns, 1e-6);
    } else {
      w.key("bound_by").null();
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();

  w.key("step_breakdown_pct");
  breakdown_obj(w, st.total, st.total_ns > 0 ? 100.0 / st.total_ns : 0.0);
  w.key("step_breakdown_ms");
  breakdown_obj(w, st.total, 1e-6);
  bound_section(w, t.bound, st.total_ns);

  const auto& g = t.gpu;
  w.key("gpu").begin_object();
  w.field("present", g.present);
  w.field("devices", g.devices);
  w.field("span_ms", ms(g.span_ns));
  w.field("busy_ms", ms(g.busy_ns));
  w.field("idle_ms", ms(g.idle_ns));
  w.field("compute_ms", ms(g.compute_ns));
  w.field("non_compute_ms", ms(g.non_compute_ns));
  w.field("idle_pct", g.idle_pct);
  w.field("compute_pct", g.compute_pct);
  w.field("non_compute_pct", g.non_compute_pct);
  w.field("idle_host_wait_ms", ms(g.idle_host_wait_ns));
  w.field("idle_kernel_wait_ms", ms(g.idle_kernel_wait_ns));
  w.field("idle_other_ms", ms(g.idle_other_ns));
  w.field("utilization_pct", g.utilization_pct);
  w.field("est_sm_efficiency_pct", g.est_sm_efficiency_pct);
  w.field("est_occupancy_pct", g.est_occupancy_pct);
  // Idle attribution (analysis/idle_attribution.cpp): the buckets sum to idle_ms.
  const auto& ia = g.attribution;
  w.field("idle_unattributed_ms", ms(ia.unattributed_ns));
  w.field("idle_gaps", ia.gaps);
  w.key("idle_by_cause_ms").begin_object();
  for (int c = 0; c < analysis::kIdleCauses; ++c)
    w.field(analysis::idle_cause_name(static_cast<analysis::IdleCause>(c)), ms(ia.by_cause_ns[c]));
  w.end_object();
  w.key("idle_attribution").begin_array();
  for (const auto& e : ia.entries) {
    w.begin_object();
    w.field("cause", analysis::idle_cause_name(e.cause));
    w.field("host_event", e.host_event);
    w.field("op", e.op);
    w.field("annotation", e.annotation);
    w.field("frame", e.frame);
    w.field("ms", ms(e.ns));
    w.field("pct_of_idle", e.pct_of_idle);
    w.field("pct_of_step", e.pct_of_step);
    w.field("gaps", e.gaps);
    w.end_object();
  }
  w.end_array();
  w.end_object();

  const auto& k = t.kernels;
  w.key("kernels").begin_object();
  w.field("count", k.count);
  w.field("per_step", k.per_step);
  w.field("total_ms", ms(k.total_ns));
  w.field("median_us", k.median_ns / 1e3);
  w.field("under_10us_pct", k.under_10us_pct);
  w.field("triton_kernels", k.triton_kernels);
  w.key("launch").begin_object();
  w.field("launches", k.launch.launches);
  w.field("median_launch_delay_us", k.launch.median_launch_delay_ns / 1e3);
  w.field("median_runtime_us", k.launch.median_runtime_ns / 1e3);
  w.field("short_kernels", k.launch.short_kernels);
  w.field("runtime_outliers", k.launch.runtime_outliers);
  w.field("launch_delay_outliers", k.launch.launch_delay_outliers);
  w.end_object();
  w.key("top").begin_array();
  for (size_t i = 0; i < k.top.size() && int(i) < top; ++i) {
    const auto& r = k.top[i];
    w.begin_object()
        .field("name", r.name)
        .field("count", r.count)
        .field("total_ms", ms(r.total_ns))
        .field("median_us", r.median_ns / 1e3)
        .field("share_pct", r.share_pct)
        .end_object();
  }
  w.end_array();
  w.end_object();

  const auto& c = t.copies;
  w.key("memcpy").begin_object();
  w.key("rows").begin_array();
  for (const auto& r : c.rows) {
    w.begin_object()
        .field("direction", r.direction)
        .field("kind", r.kind)
        .field("count", r.count)
        .field("bytes", r.bytes)
        .field("time_ms", ms(r.time_ns))
        .field("bandwidth_gbps", r.bandwidth_gbps)
        .end_object();
  }
  w.end_array();
  w.field("pageable_count", c.pageable_count);
  w.field("pageable_bytes", c.pageable_bytes);
  w.field("pageable_time_ms", ms(c.pageable_time_ns));
  w.field("blocking_memcpy_calls", c.blocking_memcpy_calls);
  w.field("per_step", c.per_step);
  w.end_object();

  const auto& sy = t.syncs;
  w.key("syncs").begin_object();
  w.field("count", sy.count);
  w.field("per_step", sy.per_step);
  w.field("time_ms", ms(sy.time_ns));
  w.field("time_per_step_ms", ms(sy.time_per_step_ns));
  w.field("pct_of_step", sy.pct_of_step);
  w.field("item_calls", sy.item_calls);
  w.key("rows").begin_array();
  for (const auto& r : sy.rows) w.begin_object().field("kind", r.kind).field("count", r.count).field("time_ms", ms(r.time_ns)).end_object();
  w.end_array();
  w.end_object();

  const auto& m = t.memory;
  w.key("memory").begin_object();
  w.field("present", m.present);
  w.field("relative", m.relative);
  w.field("device", m.device);
  w.array("allocated_at_step_end_bytes", m.allocated_at_step_end);
  w.field("slope_bytes_per_step", m.slope_bytes_per_step);
  w.field("peak_allocated_bytes", m.peak_allocated);
  w.field("peak_reserved_bytes", m.peak_reserved);
  w.field("device_total_bytes", m.device_total);
  w.field("peak_reserved_pct_of_device", m.peak_reserved_pct_of_device);
  w.end_object();

  const auto& p = t.precision;
  w.key("precision").begin_object();
  w.field("gemm_kernels", p.gemm_kernels);
  w.field("gemm_time_ms", ms(p.gemm_time_ns));
  w.key("time_by_class_ms").begin_object();
  for (const auto& [cls, ns] : p.time_by_class_ns) w.field(cls, ms(ns));
  w.end_object();
  w.field("tensor_core_share_pct", p.tensor_core_share_pct);
  w.field("fp32_share_pct", p.fp32_share_pct);
  w.field("compute_capability", p.compute_capability);
  w.field("misaligned_calls", p.misaligned_calls);
  w.field("half_gemm_calls", p.half_gemm_calls);
  w.key("misaligned").begin_array();
  for (const auto& s : p.misaligned) w.begin_object().field("op", s.op).field("dims", s.dims).field("count", s.count).end_object();
  w.end_array();
  w.end_object();

  const auto& pa = t.parallel;
  w.key("parallel").begin_object();
  w.field("optimizer", pa.optimizer);
  w.field("optimizer_impl", pa.optimizer_impl);
  w.field("optimizer_kernels_per_step", pa.optimizer_kernels_per_step);
  w.field("data_parallel", pa.data_parallel);
  w.field("ddp", pa.ddp);
  w.field("compiled", pa.compiled);
  w.field("comm_kernels", pa.comm_kernels);
  w.field("comm_time_ms", ms(pa.comm_time_ns));
  w.field("comm_pct_of_gpu", pa.comm_pct_of_gpu);
  w.field("comm_pct_of_step", pa.comm_pct_of_step);
  w.field("comm_overlap_pct", pa.comm_overlap_pct);
  w.field("rank", pa.rank);
  w.field("world_size", pa.world_size);
  w.field("backend", pa.backend);
  w.end_object();
  collectives_section(w, t.collectives, st.total_ns);
  timeline_section(w, t.timeline, t0);
  w.end_object();
}

void samples_obj(JsonWriter& w, const diagnose::SamplesEvidence& s) {
  w.begin_object();
  w.field("duration_s", s.duration_s);
  w.field("gpus", s.gpus);
  w.field("nvml", s.nvml);
  w.field("gpu_util_mean_pct", s.gpu_util_mean_pct);
  w.field("gpu_util_p10_pct", s.gpu_util_p10_pct);
  w.field("gpu_util_p90_pct", s.gpu_util_p90_pct);
  w.field("sm_active_mean_pct", s.sm_active_mean_pct);
  w.field("tensor_active_mean_pct", s.tensor_active_mean_pct);
  w.field("gpu_pattern", s.gpu_pattern);
  w.field("sawtooth_period_ms", s.sawtooth_period_ms);
  w.field("sawtooth_duty_pct", s.sawtooth_duty_pct);
  w.field("gpu_mem_used_max_bytes", s.gpu_mem_used_max_bytes);
  w.field("gpu_mem_total_bytes", s.gpu_mem_total_bytes);
  w.field("temp_max_c", s.temp_max_c);
  w.field("power_mean_w", s.power_mean_w);
  w.field("throttle_reasons_seen", s.throttle_reasons_seen);
  w.field("throttled_pct", s.throttled_pct);
  w.field("cpu_cores", s.cpu_cores);
  w.field("cpu_budget_cores", s.cpu_budget_cores);
  w.field("host_cpu_mean_pct", s.host_cpu_mean_pct);
  w.field("process_tree_cpu_mean_pct", s.process_tree_cpu_mean_pct);
  w.field("process_tree_cpu_max_pct", s.process_tree_cpu_max_pct);
  w.field("process_tree_cpu_demand_max_pct", s.process_tree_cpu_demand_max_pct);
  w.field("process_tree_sys_mean_pct", s.process_tree_sys_mean_pct);
  w.field("process_tree_minflt_mean_per_s", s.process_tree_minflt_mean_per_s);
  w.key("cpu_window_s");
  if (s.cpu_window_s >= 0) w.value(s.cpu_window_s); else w.null();
  w.field("process_count", s.process_count);
  w.field("threads_total", s.threads_total);
  w.field("nonvoluntary_switches_per_s", s.nonvoluntary_switches_per_s);
  w.field("cpu_vendor", s.cpu_vendor);
  w.field("shm_fault_ms_per_mib", s.shm_fault_ms_per_mib);
  w.key("series").begin_object();
  w.array("t_s", s.series.t_s);
  w.array("gpu_util_pct", s.series.gpu_util_pct);
  w.array("cpu_util_pct", s.series.cpu_util_pct);
  w.array("gpu_mem_used_bytes", s.series.gpu_mem_used_bytes);
  w.end_object();
  w.array("step_start_s", s.step_start_s);
  w.end_object();
}

}  // namespace

std::string render_json(const ReportInput& in, bool pretty) {
  JsonWriter w(pretty);
  const auto& d = in.diagnosis;
  w.begin_object();
  w.field("schema", kSchemaId);
  w.key("tool").begin_object().field("name", "trainscope").field("version", "0.1.0").end_object();
  w.field("command", in.command);
  w.field("verdict", d.verdict);
  w.key("scenario").begin_object();
  w.field("id", diagnose::scenario_id(d.scenario));
  w.field("title", diagnose::scenario_title(d.scenario));
  w.field("reason", d.scenario_reason);
  w.end_object();
  w.key("findings").begin_array();
  for (const auto& f : d.findings) finding_obj(w, f);
  w.end_array();
  w.key("traces").begin_array();
  for (const auto& t : in.traces) trace_obj(w, t, in.top);
  w.end_array();
  w.key("ranks").begin_array();
  for (const auto& r : in.ranks) {
    w.begin_object()
        .field("path", r.path)
        .field("rank", r.rank)
        .field("steps", r.steps)
        .field("median_step_ms", r.median_step_ms)
        .field("comm_ms_per_step", r.comm_ms_per_step)
        .field("idle_pct", r.idle_pct)
        .field("wait_ms_per_step", r.wait_ms_per_step)
        .field("straggler", r.straggler);
    // The run layer's per-rank columns (null when the table came from traces alone).
    auto num_or_null = [&w](const char* k, double v, bool known) {
      w.key(k);
      if (known) w.value(v); else w.null();
    };
    w.key("local_rank");
    if (r.local_rank >= 0) w.value(r.local_rank); else w.null();
    w.key("pid");
    if (r.pid > 0) w.value(r.pid); else w.null();
    w.field("step_ms", r.median_step_ms);
    num_or_null("data_wait_ms", r.data_wait_ms, r.data_wait_ms >= 0);
    num_or_null("backward_ms", r.backward_ms, r.backward_ms >= 0);
    num_or_null("busy_ms", r.busy_ms, r.busy_ms >= 0);
    w.field("wait_ms", r.wait_ms_per_step);
    num_or_null("rss_max_bytes", r.rss_max_bytes, r.rss_max_bytes >= 0);
    w.key("threads");
    if (r.threads >= 0) w.value(r.threads); else w.null();
    w.key("node");
    if (!r.node.empty()) w.value(r.node); else w.null();
    num_or_null("compute_ms", r.compute_ms, r.compute_ms >= 0);
    w.key("last_arrivals");
    if (r.last_arrivals >= 0) w.value(r.last_arrivals); else w.null();
    num_or_null("collective_wait_ms_per_step", r.collective_wait_ms_per_step, r.collective_wait_ms_per_step >= 0);
    w.end_object();
  }
  w.end_array();
  if (in.arrival) {
    const auto& a = *in.arrival;
    w.key("collective_arrival").begin_object();
    w.field("matched_calls", a.matched_calls);
    w.key("last_rank");
    if (a.last_rank >= 0) w.value(a.last_rank); else w.null();
    w.field("last_count", a.last_count);
    w.field("last_share_pct", a.matched_calls > 0 ? 100.0 * a.last_count / a.matched_calls : 0.0);
    w.field("others_wait_ms_per_step", a.others_wait_ns_per_step / 1e6);
    w.field("note", a.note);
    w.end_object();
  }
  if (in.samples) {
    w.key("samples");
    samples_obj(w, *in.samples);
  }
  // The agent's numbers are not repeated here: the run layer's `run.agent` section carries them
  // all (settings, medians, the per-step table), so a reader has one place to look.
  for (const auto& [k, raw] : in.extra_sections) w.key(k).raw(raw);
  w.end_object();
  std::string out = w.take();
  if (pretty) out += "\n";
  return out;
}

}  // namespace ts::report
