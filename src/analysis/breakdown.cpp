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

namespace {

// The union of a time-sorted row list's intervals, for the rows `keep` takes, yielded in order
// (subtract_counting_from's generator) and never stored: merged lists of every runtime call or
// operator were tens of MB of fresh memory on a large trace. Intervals that touch join, as in
// add_merged.
template <class Keep>
auto row_union(const trace::EventStore& s, const std::vector<uint32_t>& rows, Keep keep) {
  return [&s, &rows, keep, i = size_t{0}](Interval& out) mutable {
    auto usable = [&](uint32_t r) { return keep(r) && s.dur_ns[r] > 0; };
    while (i < rows.size() && !usable(rows[i])) ++i;
    if (i == rows.size()) return false;
    out = {s.ts_ns[rows[i]], s.end_ns(rows[i])};
    for (++i; i < rows.size(); ++i) {
      const uint32_t r = rows[i];
      if (!usable(r)) continue;
      if (s.ts_ns[r] > out.end) break;
      out.end = std::max(out.end, s.end_ns(r));
    }
    return true;
  };
}

}  // namespace

void analyse_breakdown(const TraceIndex& idx, StepSummary& steps) {
  if (steps.steps.empty()) return;
  const auto& s = idx.s;
  enum { K, MC, MS, COMM, RT, DL, CPU, N_ROLES };
  // A host op's role by its name (ProfilerStep# itself has none).
  auto host_role = [&](uint32_t r) {
    const uint16_t f = idx.name_flags[s.name[r]];
    return (f & kProfilerStep) ? -1 : (f & kDataLoader) ? DL : (f & kCommOp) ? COMM : CPU;
  };
  // Communication has two sources (kernels, host annotations) and data loading is needed twice:
  // those two are stored, merged.
  Intervals comm, data;
  for (uint32_t r : idx.kernels)
    if (idx.flag(r, kCommKernel)) add_merged(comm, s.ts_ns[r], s.end_ns(r));
  for (uint32_t r : idx.host_ops) {
    const int role = host_role(r);
    if (role == COMM) comm.push_back({s.ts_ns[r], s.end_ns(r)});
    else if (role == DL) add_merged(data, s.ts_ns[r], s.end_ns(r));
  }
  merge(comm);

  const Intervals bins = step_intervals(steps);
  Intervals slots = merged(bins);
  steps.dataloader_host_ns = length(intersect(slots, data));
  int64_t* fields[N_ROLES + 1];
  std::vector<std::vector<int64_t>> per_role(N_ROLES + 1, std::vector<int64_t>(bins.size(), 0));
  // Each role takes what it covers of the time still unclaimed. One pass per role counts that
  // per step and leaves the rest, into a buffer reused from role to role.
  Intervals rest;
  auto take = [&](int role, auto next) {
    subtract_counting_from(slots, next, bins, per_role[role], rest);
    slots.swap(rest);
  };
  take(K, row_union(s, idx.kernels, [&](uint32_t r) { return !idx.flag(r, kCommKernel); }));
  take(MC, row_union(s, idx.memcpys, [](uint32_t) { return true; }));
  take(MS, row_union(s, idx.memsets, [](uint32_t) { return true; }));
  take(COMM, each_of(comm));
  take(RT, row_union(s, idx.runtime, [](uint32_t) { return true; }));
  take(DL, each_of(data));
  take(CPU, row_union(s, idx.host_ops, [&](uint32_t r) { return host_role(r) == CPU; }));
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
