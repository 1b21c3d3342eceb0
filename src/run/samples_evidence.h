#pragma once
// The sampler's summary as the findings engine's SamplesEvidence (the run layer owns the
// mapping: sample does not know diagnose). Used at the end of a run and, while it runs, for
// the live top finding.
#include "diagnose/evidence.h"
#include "sample/sampler.h"

namespace ts::run {

diagnose::SamplesEvidence samples_evidence(const sample::Summary& s);

// The host's and the job's CPU figures (host_cpu_mean_pct, process_tree_cpu_mean/max/demand_max)
// over the steady steps, [t0_s, t1_s] on the sampler's clock, instead of the whole run: start-up
// peaks at every core (imports, DataLoader workers started with spawn or forkserver importing torch,
// a compile's worker pool) and says nothing of whether the loop's loading finds a free core while
// it trains. Only process readings wholly inside the span count, and only when there are at least
// two; otherwise the figures stay the whole run's. Returns whether it windowed them. The kernel's
// share and the page faults (process_tree_sys_mean_pct, process_tree_minflt_mean_per_s) also leave
// out the readings that overlap a span of `unsteady` (the profiler window's steps and its export:
// the recording's own allocations fault in pages the loop does not).
bool steady_cpu(diagnose::SamplesEvidence& e, const sample::HostHistory& h, double t0_s, double t1_s,
                const std::vector<std::pair<double, double>>& unsteady = {});

// "" or a warning that the steps were measured on a host other work kept busy: other processes'
// CPU (the host's mean less the job's, over the same steady span) of at least half a core, with the
// host at least 80% busy. The job's threads then wait for cores, so every time the report gives
// (the step, its compute, how it weighs against loading or a save) is that host's, and may differ
// on a free one; on 2 cores one other busy 2-thread process made a checkpointing loop's compute
// 19x slower (tests/corpus helper_checkpoint: 9 ms alone, 169 ms beside it). Where each training
// process runs more intra-op threads (torch_threads, 0 unknown) than the cores the others leave it,
// the warning says how many to set: there, one thread made the same loop's step 3.4-3.7x shorter
// (172-194 ms -> 51-52 ms). A warning, not a finding: the other work is not the job's, and may be
// gone on the next run.
std::string contention_warning(const diagnose::SamplesEvidence& e, int torch_threads = 0);

}  // namespace ts::run
