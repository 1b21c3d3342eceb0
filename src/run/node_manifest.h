#pragma once
// One node of a multi-node job (`trainscope run --job-dir DIR`): DIR/<node>/node.json, schema
// "trainscope.node/1" (docs/SCHEMA.md). The node's trainscope writes it when the job starts
// (state "running"), again every few seconds with its ranks so far (a heartbeat: a node that dies
// leaves its last one), and last when the job has ended (state "finished"), always atomically
// (util/private_dir.h: a temporary, fsync, rename). `trainscope report DIR` reads only these
// files (small: one row per rank), so merging a job costs memory in its ranks, not its traces.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ts::run {

inline constexpr const char* kNodeSchema = "trainscope.node/1";
inline constexpr const char* kNodeManifest = "node.json";

// Who the job is, as the node's launcher tells it: what makes two nodes the same job.
struct JobIdentity {
  std::string slurm_job_id;   // SLURM_JOB_ID
  std::string rdzv_id;        // torchrun --rdzv-id, or TORCHELASTIC_RUN_ID as the ranks saw it
  std::string master_addr;    // --master-addr / --rdzv-endpoint host / MASTER_ADDR
  std::string master_port;    // --master-port / --rdzv-endpoint port / MASTER_PORT
  int nnodes = -1;            // --nnodes (the maximum of MIN:MAX), SLURM_NNODES, or the ranks' GROUP_WORLD_SIZE
  // The key nodes are grouped by: "slurm:<id>", else "rdzv:<id>" (torchrun's default id "none"
  // names nothing), else "master:<addr>:<port>", else "" (nothing to tell jobs apart by).
  std::string key() const;
};

struct NodeRank {
  int rank = -1, local_rank = -1;
  int64_t pid = 0, steps = 0;
  double step_ms = 0, data_wait_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0, comm_ms = 0;
  // Its median time per step outside / inside synchronisation (diagnose::RanksEvidence): what the
  // job's straggler is computed from across every node.
  double nonsync_ms = 0, sync_ms = 0;
  double rss_max_bytes = -1;
  // (step, wall-clock end in Unix seconds) for a few step numbers: the same step ends on every
  // rank at about the same moment (the all-reduce is a barrier), so nodes' clocks can be compared.
  std::vector<std::pair<int64_t, double>> step_ends;
};

struct NodeFinding {
  std::string id, severity, title;
  double recoverable_fraction = 0;
};

struct NodeManifest {
  std::string state = "running";  // running | finished
  std::string host, node;         // the host name; the node's folder name in the job directory
  int node_rank = -1;
  std::string node_rank_source;   // where node_rank came from ("SLURM_NODEID", "torchrun --node-rank", ...)
  JobIdentity job;
  int world_size = -1, local_world_size = -1;
  int64_t trainscope_pid = 0;
  std::string command;            // redacted (util/redact.h)
  double started_unix = 0, updated_unix = 0, ended_unix = -1;
  int exit_code = 0, exit_signal = 0;
  std::string exit_cause;         // run::death_cause: "" for a clean end
  // The node's software and hardware, as compared across nodes ("" / -1: unknown).
  std::string python_version, torch_version, cuda_version, nccl_version, driver_version, gpu_model;
  int gpus = -1, cpu_cores = -1;
  double cpu_budget_cores = -1, shm_total_bytes = -1;
  // Its own evidence, for the straggler's cause.
  double host_cpu_mean_pct = -1, process_tree_cpu_mean_pct = -1, gpu_util_mean_pct = -1, throttled_pct = -1;
  std::string throttle_reasons, threads_summary, loader;  // loader: "num_workers=0 batch_size=32" (rank 0's)
  bool threads_oversubscribed = false;
  std::vector<NodeFinding> findings;  // its diagnosis, top first (at most 5)
  std::vector<NodeRank> ranks;        // by rank
  std::string report;                 // "report.json" once written
  std::vector<std::string> traces;    // its ranks' profiler traces, names inside the node's folder
  // Their sizes when the run ended (-1: unknown, as in a node.json written before sizes were
  // kept): a copy that is shorter was cut, told without reading the trace.
  std::vector<int64_t> trace_bytes;
};

std::string node_manifest_json(const NodeManifest& m);
// False (and why in `error`) when `text` is not a trainscope.node/1 object.
bool parse_node_manifest(const std::string& text, NodeManifest& out, std::string& error);

}  // namespace ts::run
