#pragma once
// `trainscope run --job-dir DIR` on one node of a multi-node job: which job and which node this
// is (from the launcher's command line and the environment Slurm or the user gave us), the node's
// own folder DIR/<host>-node<N>/, and its manifest (node_manifest.h) from what the run knows.
// We never build a cluster layer: the user's launcher (torchrun's rendezvous, Slurm's srun) starts
// trainscope on every node and a shared file system carries the folders.
#include <functional>
#include <string>
#include <vector>

#include "run/agent_records.h"
#include "run/node_manifest.h"

namespace ts::run {

struct RunResult;

using EnvGetter = std::function<std::string(const char*)>;  // "" when unset
std::string real_env(const char* name);

// What the command line of a torchrun launcher says (torchrun, python -m torch.distributed.run
// or torch.distributed.launch): its options up to the training script. Empty fields when the
// command is not such a launcher, or the option is not given.
struct LauncherArgs {
  bool torchrun = false;
  std::string rdzv_id, rdzv_endpoint, master_addr, master_port, nnodes, node_rank;
};
LauncherArgs parse_launcher_args(const std::vector<std::string>& command);

// The job's identity and this node's rank at start: SLURM_JOB_ID / SLURM_NODEID / SLURM_NNODES,
// torchrun's --rdzv-id, --rdzv-endpoint, --master-addr/--master-port, --nnodes, --node-rank, then
// MASTER_ADDR, MASTER_PORT, GROUP_RANK, TORCHELASTIC_RUN_ID from our own environment.
// `node_rank_flag` >= 0 (--node-rank) wins. node_rank stays -1 when nothing says it (torchrun's
// c10d rendezvous assigns it at run time: the ranks' GROUP_RANK fills it in later).
struct NodeStart {
  JobIdentity job;
  int node_rank = -1;
  std::string node_rank_source;
};
NodeStart node_start(const std::vector<std::string>& command, int node_rank_flag, const EnvGetter& env);

// DIR/<host>-node<N> (or DIR/<host>-pid<P> while the node rank is unknown), created with its
// parents. A folder of that name already there (a restarted node, a second job in the same
// directory) is never reused: the next free "-2", "-3", ... is, and `note` says why.
std::string make_node_dir(const std::string& job_dir, const std::string& host, int node_rank, long pid,
                          std::string& note);

// This host's name (gethostname; "localhost" when it has none).
std::string host_name();

// Fills the manifest's ranks, agent-reported identity (GROUP_RANK, TORCHELASTIC_RUN_ID, world
// sizes, MASTER_*) and versions from the agents' records so far. `mono_to_unix` converts the
// agents' CLOCK_MONOTONIC step ends to Unix seconds on this host.
void fill_from_records(NodeManifest& m, const Records& records, double mono_to_unix);
// The end of the run: exit, the node's facts and evidence (samples, findings), report and traces.
void fill_from_result(NodeManifest& m, const RunResult& r);
// CLOCK_REALTIME - CLOCK_MONOTONIC now, in seconds.
double monotonic_to_unix_offset();

// Writes DIR/<node>/node.json atomically (a shared, synced temporary renamed over it); false when
// it cannot (the run goes on: a warning).
bool write_node_manifest(const std::string& node_dir, const NodeManifest& m);

}  // namespace ts::run
