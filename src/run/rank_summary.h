#pragma once
// Multi-process jobs (torchrun, one agent per rank): which process is which rank (from the
// agents' hello records), each rank's steps summarised on its own (ranks are never merged into one
// median), and the straggler: the rank with the most time per step NOT spent waiting for the others
// in collectives (diagnose::RanksEvidence documents the formula and why).
// The same table can come from one profiler trace per rank (`trainscope analyze DIR`).
#include <sys/types.h>

#include <map>
#include <optional>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnose/evidence.h"
#include "run/agent_records.h"

namespace ts::run {

struct RankProcess {
  pid_t pid = 0;
  int rank = -1, local_rank = -1, world_size = -1;
};

// Processes that said hello with RANK set and WORLD_SIZE > 1 (the torchrun launcher has no RANK;
// spawn-started DataLoader workers inherit their rank's RANK: the caller picks by steps).
std::map<pid_t, RankProcess> rank_processes(const Records& r);

// The per-rank table from the agents' step records: one row per rank (its process with the most
// steps), medians after warm-up and outside the profiler window. nullopt below `min_ranks` ranks
// with steps (one node of a multi-node job may hold a single rank of the job).
std::optional<diagnose::RanksEvidence> summarise_ranks(const Records& r, size_t min_ranks = 2);

// The per-rank table from one profiler trace per rank (communication kernels as the sync time).
// nullopt below 2 traces with steps.
std::optional<diagnose::RanksEvidence> ranks_from_traces(const analysis::MultiTraceAnalysis& m);

// Fills busy_ms, wait_ms, straggler, straggler_rank, median_busy_ms and straggler_gap_ms from each
// row's median non-sync time and median sync time (same order as ev.ranks).
void find_straggler(diagnose::RanksEvidence& ev, const std::vector<double>& nonsync_ms,
                    const std::vector<double>& sync_ms);

}  // namespace ts::run
