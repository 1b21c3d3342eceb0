#include "run/rank_summary.h"
#include "run/step_units.h"

#include "util/stats.h"

#include <algorithm>

#include "run/agent_summary.h"

namespace ts::run {

std::map<pid_t, RankProcess> rank_processes(const Records& r) {
  std::map<pid_t, RankProcess> out;
  for (const auto& t : r.texts) {
    if (t.kind != "hello" && t.kind != "runtime") continue;
    if (t.get("rank").empty()) continue;
    int world = static_cast<int>(t.get_int("world_size", -1));
    int rank = static_cast<int>(t.get_int("rank", -1));
    if (rank < 0 || world <= 1) continue;
    auto& p = out[t.pid];
    p.pid = t.pid;
    p.rank = rank;
    p.world_size = world;
    if (!t.get("local_rank").empty()) p.local_rank = static_cast<int>(t.get_int("local_rank", -1));
  }
  return out;
}

void find_straggler(diagnose::RanksEvidence& ev, const std::vector<double>& nonsync_ms,
                    const std::vector<double>& sync_ms) {
  auto& rows = ev.ranks;
  if (rows.empty() || nonsync_ms.size() != rows.size() || sync_ms.size() != rows.size()) return;
  // Every rank spends at least the fastest rank's sync time in the collective itself; what any
  // rank spends beyond that is waiting for the others.
  double min_sync = *std::min_element(sync_ms.begin(), sync_ms.end());
  std::vector<double> busy;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].busy_ms = std::max(0.0, nonsync_ms[i]) + min_sync;
    busy.push_back(rows[i].busy_ms);
  }
  size_t slow = static_cast<size_t>(std::max_element(busy.begin(), busy.end()) - busy.begin());
  ev.median_busy_ms = median(busy);
  ev.straggler_gap_ms = std::max(0.0, busy[slow] - ev.median_busy_ms);
  for (auto& r : rows) r.wait_ms = std::max(0.0, busy[slow] - r.busy_ms);
  ev.straggler_rank = -1;
  for (auto& r : rows) r.straggler = false;
  if (rows.size() >= 2 && ev.median_busy_ms > 0 &&
      busy[slow] > diagnose::RanksEvidence::kStragglerRatio * ev.median_busy_ms) {
    rows[slow].straggler = true;
    ev.straggler_rank = rows[slow].rank;
  }
}

std::optional<diagnose::RanksEvidence> summarise_ranks(const Records& r, size_t min_ranks) {
  auto procs = rank_processes(r);
  if (procs.size() < min_ranks || procs.empty()) return std::nullopt;
  // One process per rank: the one with the most steps.
  std::map<int, std::pair<RankProcess, std::vector<StepRecord>>> by_rank;
  for (const auto& [pid, p] : procs) {
    std::vector<StepRecord> steps = steps_of(r, pid);
    if (steps.empty()) continue;
    auto it = by_rank.find(p.rank);
    if (it == by_rank.end() || steps.size() > it->second.second.size()) by_rank[p.rank] = {p, std::move(steps)};
  }
  if (by_rank.size() < min_ranks || by_rank.empty()) return std::nullopt;
  diagnose::RanksEvidence ev;
  ev.source = "agent";
  std::vector<double> nonsync, sync;
  for (const auto& [rank, entry] : by_rank) {
    const auto& [p, steps] = entry;
    diagnose::RanksEvidence::Rank row;
    row.rank = rank;
    row.local_rank = p.local_rank;
    row.pid = p.pid;
    row.steps = std::max(totals_of(r, p.pid).count, static_cast<int64_t>(steps.size()));  // every step, not the sample
    int64_t warmup = 0;
    std::vector<double> dur, data, fwd, bwd, opt, comm, ns, sy;
    for (const StepRecord* s : steady_steps(steps, warmup)) {
      dur.push_back(ms(s->dur_ns));
      data.push_back(ms(s->data_wait_ns));
      fwd.push_back(ms(s->fwd_ns));
      bwd.push_back(ms(s->bwd_ns));
      opt.push_back(ms(s->opt_ns));
      comm.push_back(ms(s->comm_ns));
      // DDP all-reduces inside backward(); explicit collectives are timed on their own.
      sy.push_back(ms(s->bwd_ns + s->comm_ns));
      ns.push_back(ms(s->dur_ns - s->bwd_ns - s->comm_ns));
    }
    for (const auto& s : steps) row.rss_max_bytes = std::max(row.rss_max_bytes, static_cast<double>(s.rss));
    row.rss_max_bytes = std::max(row.rss_max_bytes, static_cast<double>(totals_of(r, p.pid).rss));
    row.step_ms = median(dur);
    row.data_wait_ms = median(data);
    row.forward_ms = median(fwd);
    row.backward_ms = median(bwd);
    row.optimizer_ms = median(opt);
    row.comm_ms = median(comm);
    row.nonsync_ms = median(ns);
    row.sync_ms = median(sy);
    nonsync.push_back(row.nonsync_ms);
    sync.push_back(row.sync_ms);
    ev.ranks.push_back(row);
  }
  find_straggler(ev, nonsync, sync);
  return ev;
}

std::optional<diagnose::RanksEvidence> ranks_from_traces(const analysis::MultiTraceAnalysis& m) {
  if (!m.one_job || m.ranks.size() < 2) return std::nullopt;  // separate runs: no straggler among them
  diagnose::RanksEvidence ev;
  ev.source = "traces";
  std::vector<double> nonsync, sync;
  for (const auto& rr : m.ranks) {
    if (rr.steps <= 0) continue;
    diagnose::RanksEvidence::Rank row;
    row.rank = rr.rank;
    row.steps = rr.steps;
    row.step_ms = rr.median_step_ns / 1e6;
    row.comm_ms = rr.comm_ns_per_step / 1e6;
    // Sync time: the communication kernels per step (GPU), or, when larger, the step time the
    // trace classes as communication with nothing else running (CPU collectives such as gloo's
    // all-reduce show up only there).
    double sync_ms = row.comm_ms;
    for (const auto& t : m.traces) {
      if (t.path != rr.path || t.steps.steps.empty()) continue;
      double n = static_cast<double>(t.steps.steps.size());
      row.data_wait_ms = t.steps.dataloader_host_ns / 1e6 / n;
      sync_ms = std::max(sync_ms, t.steps.total.communication / 1e6 / n);
    }
    row.nonsync_ms = row.step_ms - sync_ms;
    row.sync_ms = sync_ms;
    nonsync.push_back(row.nonsync_ms);
    sync.push_back(sync_ms);
    ev.ranks.push_back(row);
  }
  if (ev.ranks.size() < 2) return std::nullopt;
  find_straggler(ev, nonsync, sync);
  return ev;
}

}  // namespace ts::run
