// Step-time breakdown (the TensorBoard plugin's definition; docs/ANALYSES.md).
//
// Every ns of every step goes to exactly one class, the first of these that covers it:
//   kernel        GPU kernels other than communication kernels (any device, any stream)
//   memcpy        GPU memcpy
//   memset        GPU memset
//   communication communication kernels (nccl*, ncclKernel*, hccl*, rccl*) and host-side
//                 collective annotations (nccl:*, gloo:*)
//   runtime       CUDA/HIP runtime and driver calls (cudaLaunchKernel, cuLaunchKernel, ...)
//   dataloader    enumerate(DataLoader)#*.__next__ / enumerate(DataPipe)#* host events
//   cpu_exec      any other cpu_op / user_annotation host event (ProfilerStep# itself excluded;
//                 python_function events excluded: they span whole call stacks)
//   other         the rest of the step (host idle, Python between ops)
// So the classes sum to the step time, per step and overall.
// dataloader_host_ns: |union of DataLoader calls| inside the steps, whatever ran meanwhile
// (the main thread was blocked on data that long; on the GPU the previous step may still run).
#include "analysis/passes.h"

namespace ts::analysis {

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  kernel += o.kernel;
  memcpy += o.memcpy;
  memset += o.memset;
  communication += o.communication;
  runtime += o.runtime;
  dataloader += o.dataloader;
  cpu_exec += o.cpu_exec;
  other += o.other;
  return *this;
}

void analyse_breakdown(const TraceIndex& idx, StepSummary& steps) {
  if (steps.steps.empty()) return;
  const auto& s = idx.s;
  enum { K, MC, MS, COMM, RT, DL, CPU, N_ROLES };
  Intervals role[N_ROLES];
  // Every list is sorted by start, so a role fed by one list is merged as it grows;
  // communication has two sources (kernels, host annotations), merged together after.
  Intervals comm_ops;
  auto add = [&](Intervals& v, uint32_t row) { add_merged(v, s.ts_ns[row], s.end_ns(row)); };
  for (uint32_t r : idx.kernels) add(role[idx.flag(r, kCommKernel) ? COMM : K], r);
  for (uint32_t r : idx.memcpys) add(role[MC], r);
  for (uint32_t r : idx.memsets) add(role[MS], r);
  for (uint32_t r : idx.runtime) add(role[RT], r);
  for (uint32_t r : idx.host_ops) {
    const uint16_t f = idx.name_flags[s.name[r]];
    if (f & kProfilerStep) continue;
    if (f & kDataLoader) add(role[DL], r);
    else if (f & kCommOp) add(comm_ops, r);
    else add(role[CPU], r);
  }
  role[COMM].insert(role[COMM].end(), comm_ops.begin(), comm_ops.end());

  const Intervals bins = step_intervals(steps);
  Intervals slots = merged(bins);
  merge(role[DL]);
  steps.dataloader_host_ns = length(intersect(slots, role[DL]));
  int64_t* fields[N_ROLES + 1];
  std::vector<std::vector<int64_t>> per_role(N_ROLES + 1, std::vector<int64_t>(bins.size(), 0));
  // Each role takes what it covers of the time still unclaimed. One pass per role counts that
  // per step and leaves the rest, into a buffer reused from role to role: on a large trace the
  // lists of what each role took and left were tens of MB of fresh memory.
  Intervals rest;
  for (int r = 0; r < N_ROLES; ++r) {
    merge(role[r]);
    subtract_counting(slots, role[r], bins, per_role[r], rest);
    slots.swap(rest);
    role[r] = {};
  }
  per_role[N_ROLES] = lengths_per_bin(slots, bins);

  steps.total = Breakdown{};
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    Breakdown& b = steps.steps[i].breakdown;
    fields[K] = &b.kernel;
    fields[MC] = &b.memcpy;
    fields[MS] = &b.memset;
    fields[COMM] = &b.communication;
    fields[RT] = &b.runtime;
    fields[DL] = &b.dataloader;
    fields[CPU] = &b.cpu_exec;
    fields[N_ROLES] = &b.other;
    for (int r = 0; r <= N_ROLES; ++r) *fields[r] = per_role[r][i];
    steps.total += b;
  }
}

}  // namespace ts::analysis
