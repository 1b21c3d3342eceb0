// Step-time breakdown (the TensorBoard plugin's definition; docs/ANALYSES.md).
//
// Every ns of every step goes to exactly one class, the first of these that covers it:
//   kernel        GPU kernels other than communication kernels (any device, any stream)
//   memcpy        GPU memcpy
//   memset        GPU memset
//   communication communication kernels (nccl*, ncclKernel*, hccl*, rccl*) and host-side
//                 collective annotations (nccl:*, gloo:*) on the thread that runs the steps;
//                 such annotations on other threads (gloo's workers run a DDP all-reduce while
//                 the step's thread goes on computing) only where that thread is not inside an
//                 operator (cpu_op) as its innermost event: what the step waits for, not what it
//                 overlaps. A scope (user_annotation: FSDP2's `FSDP::all_gather`) or an operator
//                 that only holds one (autograd's `evaluate_function:` running FSDP's backward
//                 hook) is waiting there
//   runtime       CUDA/HIP runtime and driver calls (cudaLaunchKernel, cuLaunchKernel, ...)
//   dataloader    enumerate(DataLoader)#*.__next__ / enumerate(DataPipe)#* host events
//   cpu_exec      any other cpu_op / user_annotation host event (ProfilerStep# itself excluded;
//                 python_function events excluded: they span whole call stacks)
//   other         the rest of the step (host idle, Python between ops)
// So the classes sum to the step time, per step and overall.
// dataloader_host_ns: |union of DataLoader calls| inside the steps, whatever ran meanwhile
// (the main thread was blocked on data that long; on the GPU the previous step may still run).
#include <algorithm>
#include <limits>

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

// Where a thread of `threads` runs an operator (cpu_op) as its innermost host event, inside
// `within` (merged), merged: the host events nest per thread (Kineto records scopes), so a walk
// with one stack per thread finds the stretches whose top is an operator. Rows that meet no
// interval of `within` are skipped (a row's parents meet whatever it meets): on a GPU trace the
// collectives beside the loop's thread are a few launches, and the walk stays off most rows.
Intervals innermost_operators(const TraceIndex& idx, const std::vector<uint32_t>& threads,
                              const Intervals& within) {
  const auto& s = idx.s;
  struct Open { int64_t start, end; bool op; };
  struct Walk { std::vector<Open> stack; int64_t t = 0; };
  std::vector<Walk> walks(threads.size());
  Intervals out;
  auto advance = [&](Walk& w, int64_t to) {  // close what ends by `to`, emitting operator stretches
    while (!w.stack.empty() && w.stack.back().end <= to) {
      if (w.stack.back().op && w.stack.back().end > w.t) out.push_back({w.t, w.stack.back().end});
      w.t = std::max(w.t, w.stack.back().end);
      w.stack.pop_back();
    }
    if (!w.stack.empty() && w.stack.back().op && to > w.t) out.push_back({w.t, to});
    w.t = std::max(w.t, to);
  };
  size_t j = 0;  // the first interval of `within` that ends after the row starts
  for (uint32_t r : idx.host_ops) {
    while (j < within.size() && within[j].end <= s.ts_ns[r]) ++j;
    if (j == within.size()) break;
    if (within[j].begin >= s.end_ns(r) || s.dur_ns[r] <= 0) continue;
    const auto it = std::find(threads.begin(), threads.end(), s.thread[r]);
    if (it == threads.end()) continue;
    Walk& w = walks[static_cast<size_t>(it - threads.begin())];
    advance(w, s.ts_ns[r]);
    // ProfilerStep# is a scope, whatever its category (a bare-array trace has none: CpuOp).
    Open row{s.ts_ns[r], s.end_ns(r), s.cat[r] == trace::Category::CpuOp && !idx.flag(r, kProfilerStep)};
    if (!w.stack.empty() && row.end > w.stack.back().end) {
      if (w.stack.back().start == row.start) {  // a parent listed after its child: beneath it
        Open child = w.stack.back();
        w.stack.back() = row;
        if (w.stack.size() > 1) w.stack.back().end = std::min(row.end, w.stack[w.stack.size() - 2].end);
        w.stack.push_back(child);
        continue;
      }
      row.end = w.stack.back().end;  // overlapping, not nested: held to its parent's end
    }
    w.stack.push_back(row);
  }
  for (Walk& w : walks) advance(w, std::numeric_limits<int64_t>::max());
  merge(out);
  return out;
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
  // The threads that run the steps (their ProfilerStep# rows). A collective annotated on another
  // thread runs beside them: the Lightning repository's PPO example (train_torch.py) under
  // torchrun on gloo (2 CPU ranks) had its gloo:all_reduce spans, on gloo's worker threads, cover
  // 57% of the step, the backward and optimizer that ran meanwhile included; without any
  // all-reduce (no_sync) the step was 34% shorter (docs/BENCHMARKS.md, session 50).
  std::vector<uint32_t> step_threads;
  for (uint32_t r : idx.host_ops)
    if (host_role(r) < 0 && std::find(step_threads.begin(), step_threads.end(), s.thread[r]) == step_threads.end())
      step_threads.push_back(s.thread[r]);
  auto on_step_thread = [&](uint32_t r) {
    return step_threads.empty() || std::find(step_threads.begin(), step_threads.end(), s.thread[r]) != step_threads.end();
  };
  // Communication has three sources (kernels, host annotations on and beside the steps' threads)
  // and data loading is needed twice: those are stored, merged.
  Intervals comm, comm_beside, data;
  for (uint32_t r : idx.kernels)
    if (idx.flag(r, kCommKernel)) add_merged(comm, s.ts_ns[r], s.end_ns(r));
  for (uint32_t r : idx.host_ops) {
    const int role = host_role(r);
    if (role == COMM) (on_step_thread(r) ? comm : comm_beside).push_back({s.ts_ns[r], s.end_ns(r)});
    else if (role == DL) add_merged(data, s.ts_ns[r], s.end_ns(r));
  }
  merge(comm);
  merge(comm_beside);
  if (!comm_beside.empty()) comm_beside = subtract(comm_beside, innermost_operators(idx, step_threads, comm_beside));

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
  take(COMM, each_of(comm_beside));
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
