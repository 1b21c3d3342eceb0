// node-mismatch: the nodes of one job do not run the same software or hardware: driver, PyTorch,
// CUDA or NCCL versions, GPU model, usable cores or /dev/shm differ. Data-parallel ranks
// synchronise at every step, so a node with an older driver, a smaller /dev/shm (DataLoader
// workers hand batches over through it) or fewer cores sets everyone's pace, and mixed NCCL or
// PyTorch versions can hang or fail collectives outright (NCCL's release notes ask for the same
// version on every rank). Evidence: NodesEvidence (each node's node.json, `report DIR`). Fires when
// a fact known on at least two nodes has two or more values; unknown values ("") never count.
#include <fmt/format.h>

#include <map>
#include <set>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> node_mismatch(const Evidence& ev) {
  if (!ev.nodes || ev.nodes->nodes.size() < 2) return std::nullopt;
  // label -> value -> nodes, in the facts' own order.
  std::vector<std::string> labels;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by;
  for (const auto& n : ev.nodes->nodes)
    for (const auto& [label, value] : n.facts) {
      if (value.empty()) continue;
      if (!by.count(label)) labels.push_back(label);
      by[label][value].push_back(n.name);
    }
  std::vector<std::string> lines;
  for (const auto& label : labels) {
    const auto& values = by[label];
    if (values.size() < 2) continue;
    std::string line = label + ":";
    for (const auto& [value, nodes] : values) {
      std::string names;
      for (size_t i = 0; i < nodes.size() && i < 4; ++i) names += (i ? ", " : "") + nodes[i];
      if (nodes.size() > 4) names += fmt::format(" and {} more", nodes.size() - 4);
      line += fmt::format(" {} on {};", value, names);
    }
    line.pop_back();
    lines.push_back(line);
  }
  if (lines.empty()) return std::nullopt;
  Finding f = make("node-mismatch", Bottleneck::Config, "nodes");
  add(f, "nodes", static_cast<double>(ev.nodes->nodes.size()), "count");
  add(f, "facts_differing", static_cast<double>(lines.size()), "count");
  f.severity = Severity::Medium;
  f.confidence = 0.9;
  f.recoverable_fraction = 0;  // what a difference costs shows in the straggler, not here
  std::string first = lines.front().substr(0, lines.front().find(':'));
  f.title = fmt::format("The job's nodes differ: {}{}", first,
                        lines.size() > 1 ? fmt::format(" and {} more", lines.size() - 1) : std::string());
  f.gain = "the same installation on every node: no node slower or failing because of what it runs";
  f.explanation = "Every rank of a data-parallel job waits for the slowest at each step, so one node that differs "
                  "(an older driver, fewer usable cores, a smaller /dev/shm for the DataLoader workers' batches, "
                  "another GPU model) sets the pace of all. Mixed PyTorch or NCCL versions can also make collectives "
                  "hang or fail: NCCL expects the same version on every rank. Differences: ";
  for (const auto& l : lines) f.explanation += l + ". ";
  f.explanation.pop_back();
  f.fix = "Run every node from the same image (container or environment) and the same node type: the same driver, "
          "PyTorch, CUDA and NCCL, the same /dev/shm size (docker --shm-size, a Kubernetes emptyDir with medium: "
          "Memory) and the same CPU allocation (Slurm --cpus-per-task, Kubernetes requests and limits).";
  f.fix_code = "srun --ntasks-per-node=1 --cpus-per-task=$CPUS --container-image=$IMAGE trainscope run -- torchrun ...";
  return f;
}

}  // namespace ts::diagnose::rules
