// straggler-rank: in a multi-process job (DDP under torchrun) one rank is slower than the others,
// and since every rank synchronises at each step (the gradient all-reduce), all of them run at the
// straggler's pace: the others wait for it inside the collective (collectives are a
// barrier). Evidence: RanksEvidence (per-rank agent records, or one trace per rank).
// Fires when the slowest rank's busy time (step minus its wait in collectives) exceeds
// RanksEvidence::kStragglerRatio (1.10) x the median rank's. The fix names the straggler's
// dominant extra phase: its data wait, its compute (forward/optimizer), or other loop time.
// In a multi-node job (`report DIR`) the straggler is named by node and rank, and the cause is read
// from that node's own evidence (NodesEvidence: its diagnosis, CPU, GPU throttling, loader).
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/stats.h"

namespace ts::diagnose::rules {
namespace {

const NodesEvidence::Node* node_named(const Evidence& ev, const std::string& name) {
  if (!ev.nodes || name.empty()) return nullptr;
  for (const auto& n : ev.nodes->nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// What the straggler's node says about itself, in one sentence ("" when nothing stands out).
std::string node_cause(const NodesEvidence::Node& n, const std::string& phase) {
  std::vector<std::string> parts;
  if (!n.finding_ids.empty())
    parts.push_back(fmt::format("its own diagnosis puts {} first ({})", n.finding_ids.front(), n.finding_titles.front()));
  if (n.throttled_pct > 0)
    parts.push_back(fmt::format("its GPU was throttled in {:.0f}% of the samples{}", n.throttled_pct,
                                n.throttle_reasons.empty() ? "" : " (" + n.throttle_reasons + ")"));
  if (n.threads_oversubscribed && !n.threads_summary.empty()) parts.push_back("threads: " + n.threads_summary);
  if (n.cpu_budget_cores > 0 && phase != "data")
    parts.push_back(fmt::format("{:g} cores for its ranks{}", n.cpu_budget_cores,
                                n.host_cpu_mean_pct >= 0 ? fmt::format(", host CPU {:.0f}% busy", n.host_cpu_mean_pct) : ""));
  if (phase == "data" && !n.loader.empty()) parts.push_back("its DataLoader: " + n.loader);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

std::optional<Finding> straggler_rank(const Evidence& ev) {
  if (!ev.ranks || ev.ranks->ranks.size() < 2) return std::nullopt;
  const RanksEvidence& r = *ev.ranks;
  auto slow = std::max_element(r.ranks.begin(), r.ranks.end(),
                               [](const auto& a, const auto& b) { return a.busy_ms < b.busy_ms; });
  std::vector<double> busy;
  for (const auto& x : r.ranks) busy.push_back(x.busy_ms);
  double med = median(busy);
  if (med <= 0 || slow->busy_ms <= RanksEvidence::kStragglerRatio * med) return std::nullopt;

  // The others: how long they wait for the straggler per step, and what share of their step.
  std::vector<double> wait, step, data, fwd, opt, other;
  for (const auto& x : r.ranks) {
    if (&x == &*slow) continue;
    wait.push_back(x.wait_ms);
    step.push_back(x.step_ms);
    data.push_back(x.data_wait_ms);
    fwd.push_back(x.forward_ms);
    opt.push_back(x.optimizer_ms);
    other.push_back(x.busy_ms - x.data_wait_ms - x.forward_ms - x.optimizer_ms);
  }
  double others_wait = median(wait), others_step = median(step);
  double wait_pct = others_step > 0 ? 100.0 * others_wait / others_step : 0;

  // Where the straggler's extra time goes, phase by phase against the others' median.
  struct Phase {
    const char* name;
    double extra_ms;
  };
  double slow_other = slow->busy_ms - slow->data_wait_ms - slow->forward_ms - slow->optimizer_ms;
  std::vector<Phase> phases = {{"data", slow->data_wait_ms - median(data)}};
  if (r.source == "agent") {
    phases.push_back({"compute", (slow->forward_ms - median(fwd)) + (slow->optimizer_ms - median(opt))});
    phases.push_back({"other", slow_other - median(other)});
  } else {
    phases.push_back({"compute", (slow->busy_ms - slow->data_wait_ms) - (med - median(data))});
  }
  const Phase& top = *std::max_element(phases.begin(), phases.end(),
                                       [](const Phase& a, const Phase& b) { return a.extra_ms < b.extra_ms; });
  std::string phase = top.name;

  double gap = slow->busy_ms - med;
  // "rank 3" or, across nodes, "rank 3 on node gpu-7-node1" (and how many of that node's ranks lag).
  const std::string who = slow->node.empty() ? fmt::format("rank {}", slow->rank)
                                             : fmt::format("rank {} on node {}", slow->rank, slow->node);
  int node_slow = 0, node_ranks = 0;
  std::string lagging;  // "2, 3": that node's ranks past the threshold
  for (const auto& x : r.ranks)
    if (!slow->node.empty() && x.node == slow->node) {
      ++node_ranks;
      if (x.busy_ms > RanksEvidence::kStragglerRatio * med) {
        ++node_slow;
        lagging += (lagging.empty() ? "" : ", ") + std::to_string(x.rank);
      }
    }
  const NodesEvidence::Node* node = node_named(ev, slow->node);
  const std::string cause = node ? node_cause(*node, phase) : "";
  Finding f = make("straggler-rank", phase == "data" ? Bottleneck::DataPipeline : Bottleneck::Communication, r.source);
  add(f, "straggler_rank", slow->rank, "count");
  add(f, "straggler_busy_ms", slow->busy_ms, "ms");
  add(f, "median_busy_ms", med, "ms");
  add(f, "busy_ratio", slow->busy_ms / med, "x");
  add(f, "others_wait_ms_per_step", others_wait, "ms");
  add(f, "others_wait_pct_of_step", wait_pct, "%");
  add(f, "straggler_data_wait_ms", slow->data_wait_ms, "ms");
  add(f, std::string("straggler_extra_") + phase + "_ms", top.extra_ms, "ms");
  add(f, "ranks", static_cast<double>(r.ranks.size()), "count");
  if (node) {
    add(f, "straggler_node_rank", node->node_rank, "count");
    add(f, "straggler_node_slow_ranks", node_slow, "count");
    add(f, "straggler_node_ranks", node_ranks, "count");
    if (node->throttled_pct >= 0) add(f, "straggler_node_throttled_pct", node->throttled_pct, "%");
    if (node->host_cpu_mean_pct >= 0) add(f, "straggler_node_host_cpu_pct", node->host_cpu_mean_pct, "%");
    if (node->cpu_budget_cores > 0) add(f, "straggler_node_cpu_budget_cores", node->cpu_budget_cores, "cores");
  }
  // A whole node slow (several of its ranks past the threshold): the median rank may be one of
  // them, so the pace to come back to is the other nodes' busiest rank, as the job report says.
  double other_nodes_busy = 0;
  // (Its only rank lagging counts too: a node of one rank.)
  const bool node_is_slow = node_slow > 1 || (node_slow == 1 && node_ranks == 1);
  if (node_is_slow)
    for (const auto& x : r.ranks)
      if (x.node != slow->node) other_nodes_busy = std::max(other_nodes_busy, x.busy_ms);
  if (node_is_slow && other_nodes_busy > 0) {
    gap = slow->busy_ms - other_nodes_busy;
    add(f, "other_nodes_busy_ms", other_nodes_busy, "ms");
  }
  // Bringing the straggler down to the median rank's pace (its node to the other nodes') gives
  // every rank the gap back.
  double job_step = std::max(slow->step_ms, others_step);
  f.recoverable_fraction = job_step > 0 ? std::clamp(gap / job_step, 0.0, 0.9) : 0;
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = r.source == "agent" ? 0.85 : 0.7;
  f.title = fmt::format("Straggler: {} is {:.0f}% slower than the median rank; the others wait {:.1f} ms per step "
                        "({:.0f}% of their step) for it",
                        who, 100.0 * (slow->busy_ms / med - 1), others_wait, wait_pct);
  if (node_is_slow && other_nodes_busy > 0) {
    f.title = fmt::format("Straggler: node {} is slow: {}its rank {} is busy {:.0f}% longer per step than any rank on the "
                          "other nodes, which wait {:.1f} ms per step ({:.0f}% of their step) for it",
                          slow->node, node_ranks > 1 ? fmt::format("{} of its {} ranks lag ({}), ", node_slow, node_ranks, lagging) : "",
                          slow->rank, 100.0 * (slow->busy_ms / other_nodes_busy - 1), others_wait, wait_pct);
    f.gain = fmt::format("every rank runs at the slowest node's pace: bringing node {} to the other nodes' pace gives {}",
                         slow->node, gain_text(f.recoverable_fraction));
  } else {
    f.gain = fmt::format("every rank runs at the slowest rank's pace: bringing {} to the median gives {}", who,
                         gain_text(f.recoverable_fraction));
  }
  f.explanation =
      "Data-parallel ranks synchronise at every step (DDP all-reduces the gradients inside "
      "backward()), so the job runs at the pace of its slowest rank: the faster ranks finish their "
      "work and then sit in the collective until the straggler arrives. Their step time looks the "
      "same as the straggler's; the difference is where it goes.";
  if (phase == "data") {
    f.fix = fmt::format(
        "{} waits {:.1f} ms per step for its data ({:+.1f} ms more than the other ranks): give its "
        "DataLoader more workers (num_workers) and pin_memory, and balance the data so every rank's shard "
        "costs the same to load (DistributedSampler with equal shards; no rank-specific slow path in the "
        "dataset or collate; the same storage and CPU budget on every node).",
        who, slow->data_wait_ms, top.extra_ms);
    f.fix_code =
        "sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, drop_last=True)\n"
        "loader = DataLoader(ds, batch_size=bs, sampler=sampler, num_workers=4, pin_memory=True,\n"
        "                    persistent_workers=True)";
  } else if (phase == "compute") {
    f.fix = fmt::format(
        "{} computes {:.1f} ms more per step than the others: check that its inputs are the same size "
        "(bucket variable-length samples so ranks get equal work), that its device is not slower or "
        "throttled, and that its CPU is not shared with more threads than cores (OMP_NUM_THREADS per rank).",
        who, top.extra_ms);
    f.fix_code = "# equal work per rank: bucket by length, drop_last=True, the same batch shape on every rank\n"
                 "torch.set_num_threads(max(1, os.cpu_count() // int(os.environ['LOCAL_WORLD_SIZE'])))";
  } else {
    f.fix = fmt::format(
        "{} spends {:.1f} ms more per step outside data loading, forward, backward and the optimizer: "
        "rank-specific work in the loop (logging, checkpointing, evaluation or .item() on one rank only). "
        "Do it less often, asynchronously, or spread it over the ranks.",
        who, top.extra_ms);
    f.fix_code = "if rank == 0 and step % 100 == 0:   # not every step\n    log(metrics)";
  }
  if (!f.fix.empty() && std::islower(static_cast<unsigned char>(f.fix[0]))) f.fix[0] = static_cast<char>(std::toupper(f.fix[0]));
  if (!cause.empty()) f.explanation += fmt::format(" Node {}'s own evidence: {}.", slow->node, cause);
  return f;
}

}  // namespace ts::diagnose::rules
