#include "run/run_report.h"
#include "run/step_units.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.h"
#include "report/report.h"
#include "util/json_writer.h"
#include "util/private_dir.h"
#include "util/redact.h"

namespace ts::run {
namespace {

// run.time_account (docs/SCHEMA.md): null when the agent sent no phases record.
void write_time_account(JsonWriter& w, const std::optional<diagnose::TimeAccount>& t) {
  w.key("time_account");
  if (!t) {
    w.null();
    return;
  }
  w.begin_object();
  w.field("total_s", t->total_s).field("before_first_step_s", t->before_first_step_s).field("compile_s", t->compile_s);
  w.field("train_steps_s", t->train_steps_s).field("eval_s", t->eval_s).field("checkpoint_s", t->checkpoint_s);
  w.field("data_wait_s", t->data_wait_s).field("data_queued_s", t->data_queued_s);
  w.field("data_start_s", t->data_start_s).field("data_starts", t->data_starts);
  w.field("eval_start_s", t->eval_start_s);
  w.field("eval_pre_s", t->eval_pre_s);
  w.field("profiler_s", t->profiler_s).field("other_s", t->other_s).field("exit_s", t->exit_s);
  w.field("goodput_pct", t->goodput_pct);
  w.field("steps", t->steps).field("eval_spans", t->eval_spans).field("eval_spans_trained", t->eval_spans_trained);
  w.field("eval_calls", t->eval_calls);
  w.field("compile_frames", t->compile_frames).field("checkpoints", t->checkpoints);
  w.field("startup_samples", t->startup_samples);
  w.key("startup_import_s");
  if (t->startup_import_s >= 0) w.value(t->startup_import_s); else w.null();
  w.end_object();
}

void write_agent(JsonWriter& w, const AgentSummary& a) {
  const auto& e = a.evidence;
  w.key("agent").begin_object();
  w.field("loaded", a.agent_loaded);
  w.field("torch_imported", a.torch_imported);
  w.field("torch_unhooked", a.torch_unhooked);
  w.field("pid", static_cast<int64_t>(a.main_pid));
  w.field("step_source", e.step_source);
  w.field("steps", e.steps);
  w.key("backward_per_optimizer_step");
  if (e.backward_per_optimizer_step >= 0) w.value(e.backward_per_optimizer_step); else w.null();
  w.field("grad_accum_steps", e.grad_accum_steps);
  w.key("optimizer_steps_per_step");
  if (e.optimizer_steps_per_step >= 0) w.value(e.optimizer_steps_per_step); else w.null();
  w.field("warmup_steps", a.warmup_steps);
  w.field("dropped_records", e.dropped_records);
  w.field("stop_reason", a.stop_reason);
  w.array("notes", e.notes);
  w.array("errors", e.agent_errors);
  // Every line of the user's code the agent recorded (the findings point at some of them).
  w.key("sites").begin_array();
  for (const auto& s : e.sites) {
    w.begin_object().field("role", s.role).field("path", s.path).field("file", s.file).field("line", s.line);
    w.field("function", s.function).field("code", s.code).field("detail", s.detail).field("sha1", s.sha1);
    w.key("guard");
    if (s.guard_line > 0)
      w.begin_object().field("line", s.guard_line).field("test", s.guard).field("doubled", s.guard_doubled).end_object();
    else
      w.null();
    w.field("loop_var", s.loop_var);
    w.key("caller");
    if (s.caller_line > 0) {
      w.begin_object().field("path", s.caller_path).field("file", s.caller_file).field("line", s.caller_line);
      w.field("function", s.caller_function).field("code", s.caller_code).field("sha1", s.caller_sha1).end_object();
    } else {
      w.null();
    }
    w.field("calls", s.calls).field("host_ms", s.host_ms);
    w.key("loop_ms");
    if (s.loop_ms >= 0) w.value(s.loop_ms); else w.null();
    w.key("calls_per_step");
    if (s.calls_per_step >= 0) w.value(s.calls_per_step); else w.null();
    w.key("ms_per_step");
    if (s.ms_per_step >= 0) w.value(s.ms_per_step); else w.null();
    w.field("bytes", s.bytes).field("pageable", s.pageable).field("blocking", s.blocking);
    w.field("starts", s.starts).field("start_ms", s.start_ms).field("restarts", s.restarts);
    w.field("restart_ms", s.restart_ms).field("rebuilds", s.rebuilds).field("rebuild_ms", s.rebuild_ms);
    w.key("knobs").begin_object();
    for (const auto& [k, v] : s.knobs) w.field(k, v);
    w.end_object();
    w.field("parsed_from", s.parsed_from);
    w.end_object();
  }
  w.end_array();

  w.key("settings").begin_object();
  w.field("python_version", e.python_version);
  w.field("torch_version", e.torch_version);
  w.field("cuda_version", e.cuda_version);
  w.field("cuda_available", e.cuda_available);
  w.field("device_name", e.device_name);
  w.field("device_capability", e.device_capability);
  w.field("device_mem_total_bytes", e.device_mem_total_bytes);
  w.field("param_device", e.param_device);
  w.field("param_dtype", e.param_dtype);
  w.field("autocast_dtype", e.autocast_dtype);
  w.field("compiled", e.compiled);
  w.field("data_parallel", e.data_parallel);
  w.field("ddp", e.ddp);
  w.field("sharding", e.sharding);
  w.field("torch_threads", e.torch_threads);
  w.field("optimizer", e.optimizer);
  w.field("optimizer_impl", e.optimizer_impl);
  w.field("optimizer_has_fused", e.optimizer_has_fused);
  w.field("optimizer_has_foreach", e.optimizer_has_foreach);
  w.field("optimizer_fused_on_device", e.optimizer_fused_on_device);
  w.field("optimizer_momentum", e.optimizer_momentum);
  w.field("optimizer_weight_decay", e.optimizer_weight_decay);
  w.field("rank", e.rank);
  w.field("world_size", e.world_size);
  w.key("tf32_matmul");
  if (e.tf32_matmul >= 0) w.value(e.tf32_matmul == 1); else w.null();
  w.key("tf32_cudnn");
  if (e.tf32_cudnn >= 0) w.value(e.tf32_cudnn == 1); else w.null();
  w.field("float32_matmul_precision", e.float32_matmul_precision);
  w.key("anomaly_detection");
  if (const auto& a = e.anomaly) {
    w.begin_object().field("check_nan", a->check_nan).field("captures_per_step", a->captures_per_step);
    w.field("capture_ms_per_step", a->capture_ns_per_step / 1e6).field("nodes_per_step", a->nodes_per_step);
    w.field("grad_tests_per_step", a->grad_tests_per_step).field("grad_elems_per_step", a->grad_elems_per_step);
    w.field("nan_test_ns", a->nan_test_ns);
    w.field("nan_test_ns_per_element", a->nan_elem_ns).field("cost_ms_per_step", a->cost_ms()).end_object();
  } else {
    w.null();
  }
  w.key("loaders").begin_array();
  for (const auto& l : e.loaders) {
    w.begin_object();
    w.field("dataset", l.dataset);
    w.field("batch_size", l.batch_size);
    w.field("num_workers", l.num_workers);
    w.field("pin_memory", l.pin_memory);
    w.field("prefetch_factor", l.prefetch_factor);
    w.field("persistent_workers", l.persistent_workers);
    w.field("iterable", l.iterable);
    w.key("start_method");
    if (l.start_method.empty()) w.null(); else w.value(l.start_method);
    w.end_object();
  }
  w.end_array();
  w.field("stream_split", e.stream_split);
  w.end_object();

  w.key("summary").begin_object();
  w.field("step_ms", e.step_ms);
  w.field("step_mean_ms", e.step_mean_ms);
  w.field("data_wait_ms", e.data_wait_ms);
  w.field("data_wait_pct", e.data_wait_pct);
  w.field("h2d_ms", e.h2d_ms);
  w.field("h2d_pct", e.h2d_pct);
  w.field("forward_ms", e.forward_ms);
  w.field("backward_ms", e.backward_ms);
  w.field("optimizer_ms", e.optimizer_ms);
  w.field("compute_ms", e.compute_ms);
  w.field("compute_low_ms", e.compute_low_ms);
  w.key("process_cpu_ms");
  if (e.process_cpu_ms >= 0) w.value(e.process_cpu_ms); else w.null();
  w.key("gpu_ms");
  if (e.gpu_ms >= 0) w.value(e.gpu_ms); else w.null();
  w.field("io_ms", e.io_ms);
  w.field("io_pct", e.io_pct);
  w.field("item_calls_per_step", e.item_calls_per_step);
  w.field("item_ms", e.item_ms);
  w.field("h2d_copies", e.h2d_copies);
  w.field("h2d_pageable", e.h2d_pageable);
  w.field("h2d_blocking", e.h2d_blocking);
  w.field("h2d_bytes_per_step", e.h2d_bytes_per_step);
  w.key("sample_getitem_ms");
  if (e.sample_getitem_ms >= 0) w.value(e.sample_getitem_ms); else w.null();
  w.key("collate_ms");
  if (e.collate_ms >= 0) w.value(e.collate_ms); else w.null();
  w.key("loading_cpu_share");
  if (e.loading_cpu_share >= 0) w.value(e.loading_cpu_share); else w.null();
  w.key("loading_run_delay_share");
  if (e.loading_run_delay_share >= 0) w.value(e.loading_run_delay_share); else w.null();
  w.field("main_process_loading_ms", e.main_process_loading_ms);
  w.field("mem_source", e.mem_source);
  w.field("mem_slope_bytes_per_step", e.mem_slope_bytes_per_step);
  w.field("mem_peak_bytes", e.mem_peak_bytes);
  w.field("mem_reserved_bytes", e.mem_reserved_bytes);
  w.field("nonfinite_losses", e.nonfinite_losses);
  w.end_object();

  // The per-step table: every step the agent recorded for the main process.
  w.key("step_table").begin_object();
  w.array("columns", {"step", "flags", "dur_ms", "data_wait_ms", "h2d_ms", "h2d_count", "h2d_bytes",
                      "forward_ms", "backward_ms", "optimizer_ms", "io_ms", "item_calls", "gpu_ms",
                      "mem_allocated", "mem_reserved", "mem_peak", "rss", "loss", "heap", "heap_free"});
  w.key("rows").begin_array();
  for (const auto& s : a.steps) {
    w.begin_array();
    w.value(s.step).value(s.flags).value(ms(s.dur_ns)).value(ms(s.data_wait_ns)).value(ms(s.h2d_ns));
    w.value(s.h2d_count).value(s.h2d_bytes).value(ms(s.fwd_ns)).value(ms(s.bwd_ns)).value(ms(s.opt_ns));
    w.value(ms(s.io_ns)).value(s.item_count);
    if (s.gpu_ns >= 0) w.value(ms(s.gpu_ns)); else w.null();
    w.value(s.mem_allocated).value(s.mem_reserved).value(s.mem_peak).value(s.rss);
    if (s.flags & kStepLoss) w.value(s.loss); else w.null();
    w.value(s.heap).value(s.heap_free);
    w.end_array();
  }
  w.end_array();
  w.end_object();
  w.end_object();
}


}  // namespace

std::string run_section_json(const RunResult& r, const RunOptions& opt) {
  JsonWriter w;
  w.begin_object();
  w.array("command", r.command_shown.empty() ? redact_argv(opt.command) : r.command_shown);
  w.field("out_dir", r.out_dir);
  w.field("started_utc", r.started_utc);
  w.field("wall_s", r.wall_s);
  w.key("exit").begin_object();
  w.field("code", r.exit.code);
  w.field("signal", r.exit.signal);
  w.field("status", r.exit.shell_code());
  std::string cause = death_cause(r);
  w.field("cause", cause);
  w.field("died_at_exit", r.evidence.job && r.evidence.job->died_at_exit);
  w.field("oom_kills", r.evidence.job ? r.evidence.job->oom_kills : int64_t{-1});
  w.key("failure_site");  // the user's line the failure's traceback came from
  if (const auto& fs = r.evidence.job ? r.evidence.job->failure_site : std::nullopt; fs) {
    w.begin_object().field("path", fs->path).field("file", fs->file).field("line", fs->line);
    w.field("function", fs->function).field("code", fs->code).end_object();
  } else {
    w.null();
  }
  // Only for a failure: a clean run's last stderr lines (warnings, progress bars) say nothing.
  w.array("stderr_tail", cause.empty() ? std::vector<std::string>{} : stderr_tail_shown(r.stderr_tail));
  w.end_object();
  w.field("stopped_by", r.stopped_by_steps ? "steps" : (r.exit.signal ? "signal" : "exit"));
  w.key("options").begin_object();
  w.field("steps", opt.steps);
  w.key("profile_steps");
  if (opt.profile) {
    w.begin_array().value(opt.profile_first).value(opt.profile_last).end_array();
  } else {
    w.null();
  }
  w.field("interval_ms", static_cast<int64_t>(opt.interval.count()));
  w.end_object();
  w.key("trace");
  if (r.trace_path.empty()) w.null(); else w.value(r.trace_path);
  w.array("rank_traces", r.rank_traces);
  w.key("trace_steps");
  if (r.agent.trace_first > 0)
    w.begin_array().value(r.agent.trace_first).value(r.agent.trace_last).end_array();
  else
    w.null();
  w.key("samples_csv");
  if (r.samples_path.empty()) w.null(); else w.value(r.samples_path);
  w.field("run_id", r.run_id);
  write_time_account(w, r.evidence.agent ? r.evidence.agent->time_account : std::nullopt);
  write_agent(w, r.agent);
  w.key("overrides").begin_array();
  for (const auto& o : r.overrides)
    w.begin_object().field("key", o.key).field("value", o.value).field("applied", o.applied).field("reason", o.reason).end_object();
  w.end_array();
  w.array("warnings", r.warnings);
  w.end_object();
  return w.take();
}

namespace {
// report.json's top-level `ranks` (docs/SCHEMA.md): the per-rank table of a torchrun job.
std::vector<report::RankLine> rank_lines(const RunResult& r) {
  std::vector<report::RankLine> out;
  if (!r.evidence.ranks) return out;
  for (const auto& x : r.evidence.ranks->ranks) {
    report::RankLine l;
    l.rank = x.rank;
    l.local_rank = x.local_rank;
    l.pid = x.pid;
    l.steps = x.steps;
    l.median_step_ms = x.step_ms;
    l.comm_ms_per_step = x.comm_ms;
    l.data_wait_ms = x.data_wait_ms;
    l.backward_ms = r.evidence.ranks->source == "agent" ? x.backward_ms : -1;
    l.busy_ms = x.busy_ms;
    l.wait_ms_per_step = x.wait_ms;
    l.straggler = x.straggler;
    l.rss_max_bytes = x.rss_max_bytes;
    if (r.evidence.samples)
      for (const auto& t : r.evidence.samples->thread_loads)
        if (t.pid == x.pid) l.threads = t.threads;
    for (const auto& p : r.rank_traces)
      if (p.find("trace_rank" + std::to_string(x.rank) + ".") != std::string::npos) l.path = p;
    out.push_back(l);
  }
  return out;
}

report::ReportInput input(const RunResult& r, const RunOptions& opt) {
  report::ReportInput in = report::from_evidence(r.evidence, r.diagnosis.value_or(diagnose::Diagnosis{}));
  in.command = "run";
  in.extra_sections.emplace_back("run", run_section_json(r, opt));
  in.ranks = rank_lines(r);
  in.extra_sections.emplace_back("host", host_section_json(r.job, &r.agent.evidence));
  // The HTML report shows the run's warnings before its findings (the JSON has them in "run"):
  // a busy host or a missing window bears on how far its figures can be trusted.
  if (!r.warnings.empty()) {
    in.preface_title = "Warnings";
    in.preface = r.warnings;
  }
  return in;
}
}  // namespace

std::string report_json(const RunResult& r, const RunOptions& opt) { return report::render_json(input(r, opt)); }

std::string report_html(const RunResult& r, const RunOptions& opt) { return report::render_html(input(r, opt)); }

std::string write_report_json(const RunResult& r, const RunOptions& opt) {
  std::string json = report_json(r, opt);
  // Whole or not at all (a job directory's node may die mid-write; report DIR reads it back).
  if (!write_shared_file_atomically(r.report_path, json))
    throw UserError(r.report_path + ": cannot write report: " + std::strerror(errno));
  return json;
}

}  // namespace ts::run
