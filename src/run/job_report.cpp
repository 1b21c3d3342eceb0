#include "run/job_report.h"

#include <fmt/format.h>

#include "util/format.h"
#include "util/json_writer.h"

namespace ts::run {
namespace {

std::string ms_text(double ms) { return ts::human_ns(ms * 1e6); }

// The job's pace: the step its slowest node sets and what fixing that node gives.
std::string pace_line(const JobView& v) {
  if (v.slowest_node.empty() || v.job_step_ms <= 0) return "";
  if (v.nodes.size() < 2 || v.next_node_busy_ms <= 0)
    return fmt::format("the job steps every {}", ms_text(v.job_step_ms));
  if (v.slowest_busy_ms <= v.next_node_busy_ms * diagnose::RanksEvidence::kStragglerRatio)
    return fmt::format("the job steps every {}; its nodes keep the same pace (the busiest rank, {} on node {}, is busy {} "
                       "per step; the other nodes' busiest {})",
                       ms_text(v.job_step_ms), v.slowest_rank, v.slowest_node, ms_text(v.slowest_busy_ms),
                       ms_text(v.next_node_busy_ms));
  return fmt::format("the job steps every {} at the pace of node {}: its rank {} is busy {} per step, the other nodes' "
                     "busiest rank {}; fixing node {} gives about {:.2f}x ({} -> {} per step)",
                     ms_text(v.job_step_ms), v.slowest_node, v.slowest_rank, ms_text(v.slowest_busy_ms),
                     ms_text(v.next_node_busy_ms), v.slowest_node, v.fixed_speedup, ms_text(v.job_step_ms),
                     ms_text(v.fixed_step_ms));
}

report::ReportInput input(const JobView& v, bool with_ranks) {
  report::ReportInput in;
  in.command = "report";
  in.diagnosis = v.diagnosis;
  in.preface_title = "JOB";
  const int nranks = v.evidence.ranks ? static_cast<int>(v.evidence.ranks->ranks.size()) : 0;
  in.preface.push_back(fmt::format("job {} in {}: {} node{}{}, {} rank{}{}", v.job_key.empty() ? "(no identity)" : v.job_key,
                                   v.dir, v.nodes.size(), v.nodes.size() == 1 ? "" : "s",
                                   v.expected_nodes > 0 ? fmt::format(" of {}", v.expected_nodes) : "", nranks,
                                   nranks == 1 ? "" : "s",
                                   v.expected_ranks > 0 ? fmt::format(" of {}", v.expected_ranks) : ""));
  if (auto p = pace_line(v); !p.empty()) in.preface.push_back(p);
  for (const auto& p : v.problems) in.preface.push_back("problem: " + p);
  if (with_ranks && v.evidence.ranks)
    for (const auto& x : v.evidence.ranks->ranks) {
      report::RankLine l;
      l.rank = x.rank;
      l.local_rank = x.local_rank;
      l.pid = x.pid;
      l.steps = x.steps;
      l.median_step_ms = x.step_ms;
      l.comm_ms_per_step = x.comm_ms;
      l.data_wait_ms = x.data_wait_ms;
      l.backward_ms = x.backward_ms;
      l.busy_ms = x.busy_ms;
      l.wait_ms_per_step = x.wait_ms;
      l.compute_ms = std::max(0.0, x.busy_ms - x.data_wait_ms);
      l.straggler = x.straggler;
      l.rss_max_bytes = x.rss_max_bytes;
      l.node = x.node;
      in.ranks.push_back(l);
    }
  return in;
}

void job_section(JsonWriter& w, const JobView& v) {
  w.begin_object();
  w.field("dir", v.dir);
  w.field("key", v.job_key);
  w.key("expected_nodes");
  if (v.expected_nodes > 0) w.value(v.expected_nodes); else w.null();
  w.key("expected_ranks");
  if (v.expected_ranks > 0) w.value(v.expected_ranks); else w.null();
  w.field("step_ms", v.job_step_ms);
  w.field("slowest_node", v.slowest_node);
  w.field("slowest_rank", v.slowest_rank);
  w.field("slowest_busy_ms", v.slowest_busy_ms);
  w.field("next_node_busy_ms", v.next_node_busy_ms);
  w.field("fixed_step_ms", v.fixed_step_ms);
  w.field("fixed_speedup", v.fixed_speedup);
  w.field("clock_offset_s", v.clock_offset_s);
  w.array("problems", v.problems);
  w.key("nodes").begin_array();
  for (const auto& n : v.nodes) {
    const auto& m = n.m;
    w.begin_object();
    w.field("node", m.node).field("host", m.host);
    w.key("node_rank");
    if (m.node_rank >= 0) w.value(m.node_rank); else w.null();
    w.field("node_rank_source", m.node_rank_source);
    w.field("status", n.status).field("dir", n.dir);
    w.field("started_unix", m.started_unix).field("updated_unix", m.updated_unix);
    w.key("facts").begin_object();
    w.field("driver_version", m.driver_version).field("torch_version", m.torch_version);
    w.field("cuda_version", m.cuda_version).field("nccl_version", m.nccl_version);
    w.field("python_version", m.python_version).field("gpu_model", m.gpu_model);
    w.field("gpus", m.gpus).field("cpu_cores", m.cpu_cores).field("cpu_budget_cores", m.cpu_budget_cores);
    w.field("shm_total_bytes", m.shm_total_bytes);
    w.end_object();
    w.key("findings").begin_array();
    for (const auto& f : m.findings) w.begin_object().field("id", f.id).field("title", f.title).end_object();
    w.end_array();
    w.array("traces", m.traces);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace

std::string job_report_text(const JobView& v, const report::TerminalStyle& style) {
  std::string out = report::render_terminal(input(v, false), style);
  if (v.evidence.ranks && !v.evidence.ranks->ranks.empty()) {
    size_t wnode = 4;
    for (const auto& r : v.evidence.ranks->ranks) wnode = std::max(wnode, r.node.size());
    out += fmt::format("\nRANKS ({} on {} nodes; compute = busy time less data wait; comm wait = time in collectives "
                       "waiting for the slowest rank)\n",
                       v.evidence.ranks->ranks.size(), v.nodes.size());
    out += fmt::format("  {:<{}} {:>5} {:>5} {:>6} {:>10} {:>10} {:>10} {:>10}\n", "node", wnode, "rank", "local", "steps",
                       "step", "data wait", "compute", "comm wait");
    for (const auto& r : v.evidence.ranks->ranks)
      out += fmt::format("  {:<{}} {:>5} {:>5} {:>6} {:>10} {:>10} {:>10} {:>10}{}\n", r.node, wnode, r.rank,
                         r.local_rank >= 0 ? std::to_string(r.local_rank) : "-", r.steps, ms_text(r.step_ms),
                         ms_text(r.data_wait_ms), ms_text(std::max(0.0, r.busy_ms - r.data_wait_ms)), ms_text(r.wait_ms),
                         r.straggler ? "  <- straggler" : "");
  }
  out += fmt::format("\nNODES ({})\n", v.nodes.size());
  for (const auto& n : v.nodes) {
    const auto& m = n.m;
    std::string facts;
    auto add = [&facts](const std::string& label, const std::string& value) {
      if (!value.empty()) facts += (facts.empty() ? "" : " · ") + label + " " + value;
    };
    add("PyTorch", m.torch_version);
    add("CUDA", m.cuda_version);
    add("NCCL", m.nccl_version);
    add("driver", m.driver_version);
    add("GPU", m.gpu_model.empty() ? (m.gpus == 0 ? "none" : "") : m.gpu_model);
    add("cores", m.cpu_budget_cores > 0 ? fmt::format("{:g}", m.cpu_budget_cores) : "");
    add("/dev/shm", m.shm_total_bytes > 0 ? ts::human_bytes(m.shm_total_bytes) : "");
    out += fmt::format("  {} (node rank {}, {}, host {}): {}\n", m.node, m.node_rank >= 0 ? std::to_string(m.node_rank) : "?",
                       n.status, m.host, facts.empty() ? "no facts recorded yet" : facts);
    if (!m.findings.empty()) out += fmt::format("      its own top finding: {}: {}\n", m.findings.front().id, m.findings.front().title);
  }
  return report::fit_lines(out, style.width);
}

std::string job_report_json(const JobView& v) {
  report::ReportInput in = input(v, true);
  JsonWriter w;
  job_section(w, v);
  in.extra_sections.emplace_back("job", w.take());
  return report::render_json(in);
}

std::string job_report_html(const JobView& v) {
  report::ReportInput in = input(v, true);
  JsonWriter w;
  job_section(w, v);
  in.extra_sections.emplace_back("job", w.take());
  return report::render_html(in);
}

}  // namespace ts::run
