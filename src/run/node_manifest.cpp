#include "run/node_manifest.h"

#include <simdjson.h>

#include "util/json_writer.h"

namespace ts::run {

std::string JobIdentity::key() const {
  if (!slurm_job_id.empty()) return "slurm:" + slurm_job_id;
  // torchrun's default --rdzv-id is "none": every job launched without one shares it.
  if (!rdzv_id.empty() && rdzv_id != "none") return "rdzv:" + rdzv_id;
  if (!master_addr.empty() || !master_port.empty()) return "master:" + master_addr + ":" + master_port;
  return "";
}

namespace {

void opt_num(JsonWriter& w, const char* k, double v) {
  w.key(k);
  if (v >= 0) w.value(v); else w.null();
}
void opt_int(JsonWriter& w, const char* k, int64_t v) {
  w.key(k);
  if (v >= 0) w.value(v); else w.null();
}

using simdjson::dom::element;

std::string str(element e, const char* k) {
  std::string_view v;
  return e[k].get_string().get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
}
double num(element e, const char* k, double dflt = -1) {
  element x;
  if (e[k].get(x) != simdjson::SUCCESS) return dflt;
  double d;
  if (x.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t i;
  if (x.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  uint64_t u;
  if (x.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return dflt;
}
int64_t integer(element e, const char* k, int64_t dflt = -1) {
  double d = num(e, k, static_cast<double>(dflt));
  return static_cast<int64_t>(d);
}

}  // namespace

std::string node_manifest_json(const NodeManifest& m) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", kNodeSchema);
  w.field("state", m.state);
  w.field("host", m.host);
  w.field("node", m.node);
  opt_int(w, "node_rank", m.node_rank);
  w.field("node_rank_source", m.node_rank_source);
  w.key("job").begin_object();
  w.field("key", m.job.key());
  w.field("slurm_job_id", m.job.slurm_job_id);
  w.field("rdzv_id", m.job.rdzv_id);
  w.field("master_addr", m.job.master_addr);
  w.field("master_port", m.job.master_port);
  opt_int(w, "nnodes", m.job.nnodes);
  w.end_object();
  opt_int(w, "world_size", m.world_size);
  opt_int(w, "local_world_size", m.local_world_size);
  w.field("trainscope_pid", m.trainscope_pid);
  w.field("command", m.command);
  w.field("started_unix", m.started_unix);
  w.field("updated_unix", m.updated_unix);
  opt_num(w, "ended_unix", m.ended_unix);
  w.key("exit").begin_object();
  w.field("code", m.exit_code).field("signal", m.exit_signal).field("cause", m.exit_cause);
  w.end_object();
  w.key("facts").begin_object();
  w.field("python_version", m.python_version);
  w.field("torch_version", m.torch_version);
  w.field("cuda_version", m.cuda_version);
  w.field("nccl_version", m.nccl_version);
  w.field("driver_version", m.driver_version);
  w.field("gpu_model", m.gpu_model);
  opt_int(w, "gpus", m.gpus);
  opt_int(w, "cpu_cores", m.cpu_cores);
  opt_num(w, "cpu_budget_cores", m.cpu_budget_cores);
  opt_num(w, "shm_total_bytes", m.shm_total_bytes);
  w.end_object();
  w.key("evidence").begin_object();
  opt_num(w, "host_cpu_mean_pct", m.host_cpu_mean_pct);
  opt_num(w, "process_tree_cpu_mean_pct", m.process_tree_cpu_mean_pct);
  opt_num(w, "gpu_util_mean_pct", m.gpu_util_mean_pct);
  opt_num(w, "throttled_pct", m.throttled_pct);
  w.field("throttle_reasons", m.throttle_reasons);
  w.field("threads_oversubscribed", m.threads_oversubscribed);
  w.field("threads_summary", m.threads_summary);
  w.field("loader", m.loader);
  w.key("findings").begin_array();
  for (const auto& f : m.findings)
    w.begin_object()
        .field("id", f.id)
        .field("severity", f.severity)
        .field("title", f.title)
        .field("recoverable_fraction", f.recoverable_fraction)
        .end_object();
  w.end_array();
  w.end_object();
  w.key("ranks").begin_array();
  for (const auto& r : m.ranks) {
    w.begin_object();
    w.field("rank", r.rank);
    opt_int(w, "local_rank", r.local_rank);
    w.field("pid", r.pid).field("steps", r.steps);
    w.field("step_ms", r.step_ms).field("data_wait_ms", r.data_wait_ms).field("forward_ms", r.forward_ms);
    w.field("backward_ms", r.backward_ms).field("optimizer_ms", r.optimizer_ms).field("comm_ms", r.comm_ms);
    w.field("nonsync_ms", r.nonsync_ms).field("sync_ms", r.sync_ms);
    opt_num(w, "rss_max_bytes", r.rss_max_bytes);
    w.key("step_ends").begin_array();
    for (const auto& [step, t] : r.step_ends) w.begin_array().value(step).value(t).end_array();
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.field("report", m.report);
  w.array("traces", m.traces);
  w.key("trace_bytes").begin_array();
  for (size_t i = 0; i < m.traces.size(); ++i) w.value(i < m.trace_bytes.size() ? m.trace_bytes[i] : int64_t{-1});
  w.end_array();
  w.end_object();
  std::string s = w.take();
  s += "\n";
  return s;
}

bool parse_node_manifest(const std::string& text, NodeManifest& m, std::string& error) {
  simdjson::dom::parser parser;
  element doc;
  if (auto e = parser.parse(text).get(doc); e != simdjson::SUCCESS) {
    error = std::string("not valid JSON (") + simdjson::error_message(e) + ")";
    return false;
  }
  if (!doc.is_object() || str(doc, "schema") != kNodeSchema) {
    error = std::string("not a ") + kNodeSchema + " manifest (its \"schema\" says \"" + str(doc, "schema") + "\")";
    return false;
  }
  m = NodeManifest{};
  m.state = str(doc, "state");
  m.host = str(doc, "host");
  m.node = str(doc, "node");
  m.node_rank = static_cast<int>(integer(doc, "node_rank"));
  m.node_rank_source = str(doc, "node_rank_source");
  element job;
  if (doc["job"].get(job) == simdjson::SUCCESS) {
    m.job.slurm_job_id = str(job, "slurm_job_id");
    m.job.rdzv_id = str(job, "rdzv_id");
    m.job.master_addr = str(job, "master_addr");
    m.job.master_port = str(job, "master_port");
    m.job.nnodes = static_cast<int>(integer(job, "nnodes"));
  }
  m.world_size = static_cast<int>(integer(doc, "world_size"));
  m.local_world_size = static_cast<int>(integer(doc, "local_world_size"));
  m.trainscope_pid = integer(doc, "trainscope_pid", 0);
  m.command = str(doc, "command");
  m.started_unix = num(doc, "started_unix", 0);
  m.updated_unix = num(doc, "updated_unix", 0);
  m.ended_unix = num(doc, "ended_unix");
  element ex;
  if (doc["exit"].get(ex) == simdjson::SUCCESS) {
    m.exit_code = static_cast<int>(integer(ex, "code", 0));
    m.exit_signal = static_cast<int>(integer(ex, "signal", 0));
    m.exit_cause = str(ex, "cause");
  }
  element f;
  if (doc["facts"].get(f) == simdjson::SUCCESS) {
    m.python_version = str(f, "python_version");
    m.torch_version = str(f, "torch_version");
    m.cuda_version = str(f, "cuda_version");
    m.nccl_version = str(f, "nccl_version");
    m.driver_version = str(f, "driver_version");
    m.gpu_model = str(f, "gpu_model");
    m.gpus = static_cast<int>(integer(f, "gpus"));
    m.cpu_cores = static_cast<int>(integer(f, "cpu_cores"));
    m.cpu_budget_cores = num(f, "cpu_budget_cores");
    m.shm_total_bytes = num(f, "shm_total_bytes");
  }
  element ev;
  if (doc["evidence"].get(ev) == simdjson::SUCCESS) {
    m.host_cpu_mean_pct = num(ev, "host_cpu_mean_pct");
    m.process_tree_cpu_mean_pct = num(ev, "process_tree_cpu_mean_pct");
    m.gpu_util_mean_pct = num(ev, "gpu_util_mean_pct");
    m.throttled_pct = num(ev, "throttled_pct");
    m.throttle_reasons = str(ev, "throttle_reasons");
    bool b = false;
    m.threads_oversubscribed = ev["threads_oversubscribed"].get_bool().get(b) == simdjson::SUCCESS && b;
    m.threads_summary = str(ev, "threads_summary");
    m.loader = str(ev, "loader");
    simdjson::dom::array fs;
    if (ev["findings"].get_array().get(fs) == simdjson::SUCCESS)
      for (element x : fs)
        m.findings.push_back({str(x, "id"), str(x, "severity"), str(x, "title"), num(x, "recoverable_fraction", 0)});
  }
  simdjson::dom::array ranks;
  if (doc["ranks"].get_array().get(ranks) == simdjson::SUCCESS) {
    for (element x : ranks) {
      NodeRank r;
      r.rank = static_cast<int>(integer(x, "rank"));
      r.local_rank = static_cast<int>(integer(x, "local_rank"));
      r.pid = integer(x, "pid", 0);
      r.steps = integer(x, "steps", 0);
      r.step_ms = num(x, "step_ms", 0);
      r.data_wait_ms = num(x, "data_wait_ms", 0);
      r.forward_ms = num(x, "forward_ms", 0);
      r.backward_ms = num(x, "backward_ms", 0);
      r.optimizer_ms = num(x, "optimizer_ms", 0);
      r.comm_ms = num(x, "comm_ms", 0);
      r.nonsync_ms = num(x, "nonsync_ms", 0);
      r.sync_ms = num(x, "sync_ms", 0);
      r.rss_max_bytes = num(x, "rss_max_bytes");
      simdjson::dom::array ends;
      if (x["step_ends"].get_array().get(ends) == simdjson::SUCCESS)
        for (element p : ends) {
          simdjson::dom::array pair;
          if (p.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2) continue;
          int64_t st = 0;
          double t = 0;
          if (pair.at(0).get_int64().get(st) == simdjson::SUCCESS && pair.at(1).get_double().get(t) == simdjson::SUCCESS)
            r.step_ends.emplace_back(st, t);
        }
      if (r.rank >= 0) m.ranks.push_back(std::move(r));
    }
  }
  m.report = str(doc, "report");
  simdjson::dom::array tr;
  if (doc["traces"].get_array().get(tr) == simdjson::SUCCESS)
    for (element x : tr) {
      std::string_view v;
      if (x.get_string().get(v) == simdjson::SUCCESS) m.traces.emplace_back(v);
    }
  m.trace_bytes.assign(m.traces.size(), -1);
  simdjson::dom::array tb;
  if (doc["trace_bytes"].get_array().get(tb) == simdjson::SUCCESS) {
    size_t i = 0;
    for (element x : tb) {
      int64_t b;
      if (i < m.trace_bytes.size() && x.get_int64().get(b) == simdjson::SUCCESS) m.trace_bytes[i] = b;
      ++i;
    }
  }
  return true;
}

}  // namespace ts::run
