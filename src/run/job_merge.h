#pragma once
// `trainscope report DIR` on a job directory (`trainscope run --job-dir DIR` on every node): every
// node's node.json merged into one view of the job. Reads one small file per node, one at a time,
// and keeps one row per rank: memory grows with the ranks, never with the traces or the steps.
// What is wrong with the directory (a node missing, still running or dead, two jobs mixed, a
// write cut off, clocks that disagree) is one line each in `problems`, and the report shows what
// is there.
#include <functional>
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"
#include "run/node_manifest.h"

namespace ts::run {

// A folder with at least one sub-folder holding a node.json (or a leftover .node.json.tmp).
bool is_job_dir(const std::string& dir);

struct JobNodeView {
  NodeManifest m;
  std::string dir;     // its folder
  std::string status;  // finished | failed | running | stopped (heartbeat stale: died or cut off)
};

struct JobView {
  std::string dir, job_key;
  std::vector<JobNodeView> nodes;      // the reported job's nodes, by node rank then name
  std::vector<std::string> problems;   // one line each
  int expected_nodes = -1, expected_ranks = -1, ranks = 0;
  diagnose::Evidence evidence;         // ranks (every node's, with the node) and nodes
  diagnose::Diagnosis diagnosis;
  // The job's step as the slowest node sets it, and what fixing that node gives.
  double job_step_ms = 0;              // median step over every rank (they step together)
  std::string slowest_node;            // the node of the busiest rank
  int slowest_rank = -1;
  double slowest_busy_ms = 0, next_node_busy_ms = 0;  // busiest rank of that node / of every other node
  double fixed_step_ms = 0, fixed_speedup = 1;        // the step once the slowest node keeps the others' pace
  double clock_offset_s = 0;           // largest disagreement between two nodes' clocks (by step ends)
};

// Reads DIR. `now_unix` decides which running nodes are stale; `progress(done, total)` after each
// node. Throws UserError when DIR holds no node at all.
JobView merge_job_dir(const std::string& dir, double now_unix,
                      const std::function<void(size_t, size_t)>& progress = {});

// A node still "running" whose manifest is older than this stopped writing (died, or lost the
// shared file system): three missed heartbeats and then some.
inline constexpr double kNodeStaleS = 45.0;
// Nodes' clocks disagree when the same step ends more than this far apart by their clocks (and
// more than two job steps: the ranks leave the all-reduce together).
inline constexpr double kClockSkewS = 2.0;

}  // namespace ts::run
