#include "run/job_merge.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>

#include "diagnose/diagnose.h"
#include "run/job_node.h"
#include "run/rank_summary.h"
#include "trace/written_whole.h"
#include "util/error.h"
#include "util/format.h"
#include "util/stats.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {

bool read_small(const fs::path& p, std::string& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// "2-3, 7" from sorted ints.
std::string ranges(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j == i ? std::to_string(v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return out;
}

// A trace the report cannot even read is `analyze`'s to explain: here only a cut-off one is named.
bool cut_off(const fs::path& p) {
  try {
    return trace::json_cut_off(p.string());
  } catch (const UserError&) {
    return false;
  }
}

double last_seen(const NodeManifest& m) { return m.ended_unix > 0 ? m.ended_unix : m.updated_unix; }

// The facts compared across nodes, as node-mismatch names them.
std::vector<std::pair<std::string, std::string>> facts_of(const NodeManifest& m) {
  auto num = [](double v, const char* unit) { return v > 0 ? fmt::format("{:g}{}", v, unit) : std::string(); };
  return {{"driver", m.driver_version},
          {"PyTorch", m.torch_version},
          {"CUDA", m.cuda_version},
          {"NCCL", m.nccl_version},
          {"Python", m.python_version},
          {"GPU model", m.gpu_model},
          {"GPUs", m.gpus >= 0 ? std::to_string(m.gpus) : ""},
          {"usable cores", num(m.cpu_budget_cores, " cores")},
          {"/dev/shm", m.shm_total_bytes > 0 ? human_bytes(m.shm_total_bytes) : ""}};
}

// One job's nodes out of everything in the directory: grouped by the job key, and, within a key,
// by overlapping lifetimes (a later job reusing the same master address and port is another job).
std::vector<std::vector<JobNodeView>> group_jobs(std::vector<JobNodeView> all) {
  std::map<std::string, std::vector<JobNodeView>> by_key;
  for (auto& n : all) by_key[n.m.job.key()].push_back(std::move(n));
  // Nodes without any identity join the only keyed job when there is one.
  if (by_key.size() == 2 && by_key.count("")) {
    auto unkeyed = std::move(by_key[""]);
    by_key.erase("");
    auto& other = by_key.begin()->second;
    for (auto& n : unkeyed) other.push_back(std::move(n));
  }
  std::vector<std::vector<JobNodeView>> groups;
  for (auto& [key, nodes] : by_key) {
    std::sort(nodes.begin(), nodes.end(),
              [](const JobNodeView& a, const JobNodeView& b) { return a.m.started_unix < b.m.started_unix; });
    std::vector<JobNodeView> cur;
    double cur_end = 0;
    for (auto& n : nodes) {
      if (!cur.empty() && n.m.started_unix > cur_end) {
        groups.push_back(std::move(cur));
        cur.clear();
      }
      cur_end = cur.empty() ? last_seen(n.m) : std::max(cur_end, last_seen(n.m));
      cur.push_back(std::move(n));
    }
    if (!cur.empty()) groups.push_back(std::move(cur));
  }
  return groups;
}

std::string describe_job(const std::vector<JobNodeView>& g) {
  std::string names;
  for (size_t i = 0; i < g.size() && i < 3; ++i) names += (i ? ", " : "") + g[i].m.node;
  if (g.size() > 3) names += fmt::format(" and {} more", g.size() - 3);
  const std::string key = g.front().m.job.key();
  return fmt::format("{} ({})", key.empty() ? "a job without identity" : key, names);
}

// The nodes' clocks against the first node's: for each step number both record, the median of
// their ranks' wall-clock ends; the offset is the median difference over those steps.
void check_clocks(JobView& v) {
  auto ends = [](const NodeManifest& m) {
    std::map<int64_t, std::vector<double>> by_step;
    for (const auto& r : m.ranks)
      for (const auto& [s, t] : r.step_ends) by_step[s].push_back(t);
    std::map<int64_t, double> out;
    for (auto& [s, ts] : by_step) out[s] = median(ts);
    return out;
  };
  if (v.nodes.size() < 2) return;
  const auto ref = ends(v.nodes.front().m);
  for (size_t i = 1; i < v.nodes.size(); ++i) {
    const auto mine = ends(v.nodes[i].m);
    std::vector<double> diffs;
    for (const auto& [s, t] : mine)
      if (auto it = ref.find(s); it != ref.end()) diffs.push_back(t - it->second);
    if (diffs.empty()) continue;
    const double off = median(diffs);
    if (std::fabs(off) > std::fabs(v.clock_offset_s)) v.clock_offset_s = off;
    if (std::fabs(off) > std::max(kClockSkewS, 2 * v.job_step_ms / 1e3))
      v.problems.push_back(fmt::format(
          "clocks disagree: by node {}'s clock its steps end {:.1f} s {} than node {}'s do (every rank leaves a step's "
          "all-reduce together): the report compares nodes by step number, never by their clocks; sync them (chrony, NTP) "
          "before comparing their logs",
          v.nodes[i].m.node, std::fabs(off), off > 0 ? "later" : "earlier", v.nodes.front().m.node));
  }
}

}  // namespace

bool is_job_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (!e.is_directory(ec2)) continue;
    if (fs::exists(e.path() / kNodeManifest, ec2) || fs::exists(e.path() / (std::string(".") + kNodeManifest + ".tmp"), ec2))
      return true;
  }
  return false;
}

JobView merge_job_dir(const std::string& dir, double now_unix, const std::function<void(size_t, size_t)>& progress) {
  JobView v;
  v.dir = dir;
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2) && e.path().filename().string()[0] != '.') folders.push_back(e.path());
  }
  if (ec) throw UserError(dir + ": cannot read the job directory: " + ec.message());
  std::sort(folders.begin(), folders.end());
  std::vector<JobNodeView> all;
  const std::string here = host_name();
  for (size_t i = 0; i < folders.size(); ++i) {
    const fs::path& f = folders[i];
    const std::string name = f.filename().string();
    const fs::path manifest = f / kNodeManifest;
    const bool tmp_left = fs::exists(f / (std::string(".") + kNodeManifest + ".tmp"), ec);
    std::string text, err;
    JobNodeView n;
    n.dir = f.string();
    if (!read_small(manifest, text)) {
      v.problems.push_back(tmp_left ? fmt::format("{}: node.json was never completed (its first write was cut off): node "
                                                  "left out", manifest.string())
                                    : fmt::format("{}: no node.json (not a trainscope node, or it died before its first "
                                                  "write): folder left out", f.string()));
      if (progress) progress(i + 1, folders.size());
      continue;
    }
    if (!parse_node_manifest(text, n.m, err)) {
      v.problems.push_back(fmt::format("{}: {} (a partial write or copy?): node left out", manifest.string(), err));
      if (progress) progress(i + 1, folders.size());
      continue;
    }
    if (n.m.node.empty()) n.m.node = name;
    if (tmp_left)
      v.problems.push_back(fmt::format("{}: a write of node.json was cut off (.node.json.tmp is left): its last complete "
                                       "version is used",
                                       f.string()));
    all.push_back(std::move(n));
    if (progress) progress(i + 1, folders.size());
  }
  if (all.empty())
    throw UserError(dir + ": no node in this job directory (no <node>/node.json: was it written by `trainscope run --job-dir`?)");

  // Two jobs in one directory: report the one with the most nodes (then ranks, then the newest).
  auto groups = group_jobs(std::move(all));
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return a.size() > b.size();
    size_t ra = 0, rb = 0;
    for (const auto& n : a) ra += n.m.ranks.size();
    for (const auto& n : b) rb += n.m.ranks.size();
    if (ra != rb) return ra > rb;
    return a.front().m.started_unix > b.front().m.started_unix;
  });
  if (groups.size() > 1) {
    std::string others;
    for (size_t g = 1; g < groups.size(); ++g) others += (g > 1 ? "; " : "") + describe_job(groups[g]);
    v.problems.push_back(fmt::format("{} holds the nodes of {} jobs: reporting {}; left out: {} (give each job a job "
                                     "directory of its own)",
                                     dir, groups.size(), describe_job(groups[0]), others));
  }
  v.nodes = std::move(groups[0]);
  v.job_key = v.nodes.front().m.job.key();

  // One folder per node rank: a restarted node wrote a second one; the newest is reported.
  std::sort(v.nodes.begin(), v.nodes.end(), [](const JobNodeView& a, const JobNodeView& b) {
    if (a.m.node_rank != b.m.node_rank) return a.m.node_rank < b.m.node_rank;
    return a.m.started_unix > b.m.started_unix;
  });
  for (size_t i = 1; i < v.nodes.size();) {
    if (v.nodes[i].m.node_rank >= 0 && v.nodes[i].m.node_rank == v.nodes[i - 1].m.node_rank) {
      v.problems.push_back(fmt::format("node rank {} has two folders ({} and {}): a restarted node? the newer, {}, is reported",
                                       v.nodes[i].m.node_rank, v.nodes[i - 1].m.node, v.nodes[i].m.node, v.nodes[i - 1].m.node));
      v.nodes.erase(v.nodes.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }

  // Each node's state.
  for (auto& n : v.nodes) {
    const NodeManifest& m = n.m;
    if (m.state == "finished") {
      n.status = (m.exit_code != 0 || m.exit_signal != 0) && !m.exit_cause.empty() ? "failed" : "finished";
      if (n.status == "failed")
        v.problems.push_back(fmt::format("node {}: its job failed: {}", m.node, m.exit_cause));
      if (!m.report.empty() && !fs::exists(fs::path(n.dir) / m.report, ec))
        v.problems.push_back(fmt::format("{}: node.json names {} but it is not there (copied in part?)", n.dir, m.report));
      continue;
    }
    const double age = now_unix - m.updated_unix;
    bool dead = age > kNodeStaleS;
    // On this host we can ask whether its trainscope still runs.
    if (!dead && m.host == here && m.trainscope_pid > 0 && ::kill(static_cast<pid_t>(m.trainscope_pid), 0) != 0 &&
        errno == ESRCH)
      dead = true;
    n.status = dead ? "stopped" : "running";
    if (dead)
      v.problems.push_back(fmt::format("node {}: stopped writing {:.0f} s ago without finishing (trainscope on it died, or "
                                       "it lost {}): the numbers of its last update are used",
                                       m.node, age, dir));
    else
      v.problems.push_back(fmt::format("node {}: still running (updated {:.0f} s ago): its numbers so far are used", m.node,
                                       std::max(0.0, age)));
  }
  // Traces listed by a node and cut off since: a node lists its traces when its run ends, so a
  // shorter file is a partial copy (or a full disk). The size node.json recorded tells it without
  // reading the trace; only a node.json from before sizes were kept costs a read (json_cut_off).
  for (const auto& n : v.nodes)
    for (size_t i = 0; i < n.m.traces.size(); ++i) {
      const fs::path p = fs::path(n.dir) / n.m.traces[i];
      const int64_t recorded = i < n.m.trace_bytes.size() ? n.m.trace_bytes[i] : -1;
      const auto size = fs::file_size(p, ec);
      if (ec)
        v.problems.push_back(fmt::format("{}: listed in node.json but missing", p.string()));
      else if (recorded >= 0 && static_cast<int64_t>(size) < recorded)
        v.problems.push_back(fmt::format("{}: cut off ({} of the {} bytes the run wrote): a partial copy; `analyze` of the job directory leaves it out",
                                         p.string(), size, recorded));
      else if (recorded < 0 && cut_off(p))
        v.problems.push_back(fmt::format("{}: cut off (the JSON does not end): a partial write or copy; `analyze` of the job directory leaves it out",
                                         p.string()));
    }

  // What the job should have: nodes and ranks.
  std::set<int> node_ranks, rank_ids;
  for (const auto& n : v.nodes) {
    if (n.m.node_rank >= 0) node_ranks.insert(n.m.node_rank);
    v.expected_nodes = std::max(v.expected_nodes, n.m.job.nnodes);
    v.expected_ranks = std::max(v.expected_ranks, n.m.world_size);
    for (const auto& r : n.m.ranks) rank_ids.insert(r.rank);
  }
  v.ranks = static_cast<int>(rank_ids.size());
  if (v.expected_nodes > 0) {
    std::vector<int> missing;
    for (int r = 0; r < v.expected_nodes; ++r)
      if (!node_ranks.count(r)) missing.push_back(r);
    if (!missing.empty() && static_cast<int>(v.nodes.size()) < v.expected_nodes)
      v.problems.push_back(fmt::format("node{} {} of {} missing: no folder in {} (did `trainscope run --job-dir` start "
                                       "there, and can it write to this directory?)",
                                       missing.size() > 1 ? "s" : "", ranges(missing), v.expected_nodes, dir));
  }
  if (v.expected_ranks > 0) {
    std::vector<int> missing;
    for (int r = 0; r < v.expected_ranks; ++r)
      if (!rank_ids.count(r)) missing.push_back(r);
    if (!missing.empty() && missing.size() < static_cast<size_t>(v.expected_ranks))
      v.problems.push_back(fmt::format("rank{} {} of {} not reported by any node (no steps recorded, or its node is missing)",
                                       missing.size() > 1 ? "s" : "", ranges(missing), v.expected_ranks));
  }

  // Every rank of every node in one table, the straggler across all of them.
  diagnose::RanksEvidence re;
  re.source = "agent";
  std::vector<double> nonsync, sync;
  std::set<int> seen;
  for (const auto& n : v.nodes)
    for (const auto& r : n.m.ranks) {
      if (!seen.insert(r.rank).second) continue;  // a rank is reported by one node
      diagnose::RanksEvidence::Rank row;
      row.rank = r.rank;
      row.local_rank = r.local_rank;
      row.pid = r.pid;
      row.steps = r.steps;
      row.step_ms = r.step_ms;
      row.data_wait_ms = r.data_wait_ms;
      row.forward_ms = r.forward_ms;
      row.backward_ms = r.backward_ms;
      row.optimizer_ms = r.optimizer_ms;
      row.comm_ms = r.comm_ms;
      row.nonsync_ms = r.nonsync_ms;
      row.sync_ms = r.sync_ms;
      row.rss_max_bytes = r.rss_max_bytes;
      row.node = n.m.node;
      re.ranks.push_back(row);
    }
  std::sort(re.ranks.begin(), re.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  for (const auto& r : re.ranks) nonsync.push_back(r.nonsync_ms), sync.push_back(r.sync_ms);
  if (!re.ranks.empty()) find_straggler(re, nonsync, sync);
  std::vector<double> steps;
  for (const auto& r : re.ranks) steps.push_back(r.step_ms);
  v.job_step_ms = median(steps);
  if (!re.ranks.empty()) {
    const auto slow = std::max_element(re.ranks.begin(), re.ranks.end(),
                                       [](const auto& a, const auto& b) { return a.busy_ms < b.busy_ms; });
    v.slowest_node = slow->node;
    v.slowest_rank = slow->rank;
    v.slowest_busy_ms = slow->busy_ms;
    for (const auto& r : re.ranks)
      if (r.node != slow->node) v.next_node_busy_ms = std::max(v.next_node_busy_ms, r.busy_ms);
    // Fixed: the slowest node's ranks keep the other nodes' pace, so the job steps at the next
    // slowest node's busy time plus what every rank spends in the collective itself.
    const double saved = v.next_node_busy_ms > 0 ? std::max(0.0, v.slowest_busy_ms - v.next_node_busy_ms) : 0;
    v.fixed_step_ms = std::max(0.0, v.job_step_ms - saved);
    v.fixed_speedup = v.fixed_step_ms > 0 ? v.job_step_ms / v.fixed_step_ms : 1;
  }
  check_clocks(v);

  diagnose::NodesEvidence ne;
  for (const auto& n : v.nodes) {
    diagnose::NodesEvidence::Node x;
    x.name = n.m.node;
    x.node_rank = n.m.node_rank;
    x.facts = facts_of(n.m);
    x.cpu_cores = n.m.cpu_cores;
    x.cpu_budget_cores = n.m.cpu_budget_cores;
    x.host_cpu_mean_pct = n.m.host_cpu_mean_pct;
    x.process_tree_cpu_mean_pct = n.m.process_tree_cpu_mean_pct;
    x.throttled_pct = n.m.throttled_pct;
    x.throttle_reasons = n.m.throttle_reasons;
    x.threads_summary = n.m.threads_summary;
    x.threads_oversubscribed = n.m.threads_oversubscribed;
    x.loader = n.m.loader;
    for (const auto& f : n.m.findings) {
      // The node's own view of the straggler is the job's, not its cause.
      if (f.id == "straggler-rank") continue;
      x.finding_ids.push_back(f.id);
      x.finding_titles.push_back(f.title);
    }
    ne.nodes.push_back(std::move(x));
  }
  if (re.ranks.size() == 1) v.problems.push_back("one rank only: no straggler to find");
  if (!re.ranks.empty()) v.evidence.ranks = std::move(re);
  if (ne.nodes.size() >= 2) v.evidence.nodes = std::move(ne);
  v.diagnosis = diagnose::diagnose(v.evidence);
  return v;
}

}  // namespace ts::run
