#pragma once
// What fresh shared memory costs per MiB on this host, beyond the copy itself: the page faults,
// and the kernel zeroing each page, that a DataLoader worker pays when default_collate builds a
// batch in new shared memory (docs/FINDINGS.md, "Sizing num_workers"). Measured where trainscope
// runs, after the job has ended so it never competes with the training: memfd segments are
// written once fresh and once more warm; the fastest fresh write less the fastest warm one, per
// MiB, is kept (the fastest: a cost of the memory system, not of other work at the time).

namespace ts::sample {

struct ShmFaultCost {
  double ms_per_mib = -1;        // the fastest fresh write less the fastest warm rewrite; -1 unknown
  double fresh_ms_per_mib = -1;  // the fastest fresh write (faults, zeroing and the copy)
  double warm_ms_per_mib = -1;   // the fastest rewrite of the same pages (the copy alone)
};

// `mib` MiB per segment, `repeats` segments; about 10 ms of CPU per 16 MiB on
// the 2-core build VM. Never throws: unknown (-1) where memfd or mmap is refused.
ShmFaultCost measure_shm_fault_cost(int mib = 16, int repeats = 5);

}  // namespace ts::sample
