// Collectives (docs/ANALYSES.md): one row per (collective, dtype, group size) over the
// communication kernels (nccl*, ncclKernel*, ncclDevKernel*, rccl*, hccl*) starting inside the
// analysis window.
//   parameters  the kernel's own args (PyTorch 2.x records "Collective name", "In/Out msg nelems",
//               "Group size", "dtype" on it), else those of the innermost `record_param_comms`
//               cpu_op on the launching thread whose interval holds the launch call, else only
//               the collective's name from the kernel name (ncclKernel_AllReduce_... -> allreduce)
//               and the group size from distributedInfo.world_size.
//   bytes       max(In, Out msg nelems) x the dtype's size: NCCL tests' message size S (the
//               whole output of an all-gather, the whole input of a reduce-scatter); -1 unknown.
//   time        sum of the kernels' durations.
//   algbw       bytes / time (GB/s, 1e9 bytes/s), NCCL tests' algorithm bandwidth;
//   busbw       algbw x the bus factor (NCCL tests): all-reduce 2(n-1)/n; all-gather,
//               reduce-scatter, all-to-all (n-1)/n; broadcast, reduce, send/recv 1.
//               Both 0 when the bytes (or n) are unknown. The kernel time includes any wait for
//               the other ranks, so these are lower bounds on the link's speed.
//   exposed     per row: sum over its kernels of |kernel \ other GPU work| (no kernel, copy or
//               memset other than communication ran meanwhile, on any stream); the total is
//               |union of communication kernels \ other GPU work|, step_bound's communication.
// calls: every communication kernel with the ProfilerStep whose host interval holds its launch
// call and its position among that step's calls, for matching calls across ranks (multi_trace.cpp).
#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {


// record_param_comms ranges per launching thread, sorted by start, for the innermost lookup.
struct ParamRanges {
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> by_thread;
  const trace::CommArgs* enclosing(const trace::EventStore& s, uint32_t rt) const {
    auto it = by_thread.find({s.pid(rt), s.tid(rt)});
    if (it == by_thread.end()) return nullptr;
    const auto& v = it->second;
    const int64_t t = s.ts_ns[rt];
    // The innermost range holding t starts latest among those starting at or before t.
    auto pos = std::upper_bound(v.begin(), v.end(), t, [&](int64_t x, uint32_t r) { return x < s.ts_ns[r]; });
    while (pos != v.begin()) {
      --pos;
      if (s.end_ns(*pos) >= t) return s.comm_of(*pos);
      if (t - s.ts_ns[*pos] > 1'000'000'000) break;  // ranges are short: stop after a second back
    }
    return nullptr;
  }
};

}  // namespace

std::string collective_from_kernel_name(std::string_view n) {
  if (n.starts_with("void ")) n.remove_prefix(5);
  for (std::string_view p : {"ncclDevKernel_", "ncclKernel_", "rcclKernel_", "ncclDevKernel", "ncclKernel"})
    if (n.starts_with(p)) {
      n.remove_prefix(p.size());
      n = n.substr(0, n.find_first_of("_(<"));
      return n.empty() ? "" : lower(n);
    }
  return "";
}

int dtype_bytes(std::string_view d) {
  static const std::pair<std::string_view, int> kSizes[] = {
      {"Float", 4},    {"Double", 8},        {"Half", 2},          {"BFloat16", 2},
      {"Int", 4},      {"Long", 8},          {"Short", 2},         {"Char", 1},
      {"Byte", 1},     {"Bool", 1},          {"ComplexFloat", 8},  {"ComplexDouble", 16},
      {"ComplexHalf", 4}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"Float8_e4m3fnuz", 1},
      {"Float8_e5m2fnuz", 1}, {"UInt16", 2},  {"UInt32", 4},        {"UInt64", 8}};
  for (const auto& [name, bytes] : kSizes)
    if (d == name) return bytes;
  return 0;
}

double bus_factor(std::string_view c, int n) {
  if (n <= 0) return 0;
  const std::string l = lower(c);
  const double ranks = n;
  if (l.find("allreduce") != std::string::npos || l.find("all_reduce") != std::string::npos)
    return 2 * (ranks - 1) / ranks;
  for (const char* k : {"allgather", "all_gather", "reduce_scatter", "reducescatter", "alltoall", "all_to_all"})
    if (l.find(k) != std::string::npos) return (ranks - 1) / ranks;
  return 1;
}

CollectiveStats analyse_collectives(const TraceIndex& idx, const StepSummary& steps) {
  const auto& s = idx.s;
  CollectiveStats out;
  std::vector<uint32_t> comm;
  Intervals other;  // non-communication GPU work
  for (uint32_t r : idx.windowed(idx.gpu)) {
    if (s.cat[r] == trace::Category::Kernel && idx.flag(r, kCommKernel)) comm.push_back(r);
    else other.push_back({s.ts_ns[r], s.end_ns(r)});
  }
  if (comm.empty()) return out;
  merge(other);

  ParamRanges params;
  if (!s.comm_args.empty())
    for (uint32_t r : idx.host_ops)
      if (s.comm_of(r)) params.by_thread[{s.pid(r), s.tid(r)}].push_back(r);  // host_ops are sorted

  using Key = std::tuple<std::string, std::string, int>;
  std::map<Key, uint32_t> row_of;
  std::map<int64_t, int32_t> calls_in_step;
  Intervals comm_union;
  for (uint32_t k : comm) {
    const uint32_t rt = idx.launcher(k);
    const trace::CommArgs* p = s.comm_of(k);
    if (!p && rt != kNoRow) p = params.enclosing(s, rt);
    std::string name = p ? std::string(s.strings.view(p->collective)) : collective_from_kernel_name(s.name_of(k));
    if (name.empty()) name = "unknown";
    const std::string dtype = p ? std::string(s.strings.view(p->dtype)) : "";
    const int n = p && p->group_size > 0 ? p->group_size : s.meta.distributed.world_size;
    int64_t bytes = -1;
    if (p) {
      const int64_t elems = std::max(p->in_nelems, p->out_nelems);
      if (elems >= 0 && dtype_bytes(dtype) > 0) bytes = elems * dtype_bytes(dtype);
      ++out.with_params;
    }
    auto [it, fresh] = row_of.try_emplace(Key{name, dtype, n}, static_cast<uint32_t>(out.rows.size()));
    if (fresh) {
      out.rows.push_back({name, dtype, n});
      out.rows.back().bytes = 0;
    }
    CollectiveRow& row = out.rows[it->second];
    const Interval iv{s.ts_ns[k], s.end_ns(k)};
    ++row.count;
    row.time_ns += s.dur_ns[k];
    row.exposed_ns += s.dur_ns[k] - length_within(other, iv.begin, iv.end);
    // A row's bytes are known only when every call's are.
    row.bytes = bytes < 0 || row.bytes < 0 ? -1 : row.bytes + bytes;
    comm_union.push_back(iv);

    CollectiveCall call;
    call.row = it->second;
    call.start_ns = iv.begin;
    call.dur_ns = s.dur_ns[k];
    if (rt != kNoRow) {
      // The kept step whose host ProfilerStep interval holds the launch call.
      const int64_t t = s.ts_ns[rt];
      for (const Step& st : steps.steps)
        if (!steps.synthetic && st.host_start_ns <= t && t < st.host_end_ns) call.step = st.number;
    }
    call.ordinal = calls_in_step[call.step]++;
    out.calls.push_back(call);
  }
  merge(comm_union);
  out.count = static_cast<int64_t>(comm.size());
  for (CollectiveRow& r : out.rows) {
    out.time_ns += r.time_ns;
    if (r.bytes > 0 && r.time_ns > 0) {
      r.algbw_gbps = static_cast<double>(r.bytes) / static_cast<double>(r.time_ns);  // bytes/ns = GB/s
      r.busbw_gbps = r.algbw_gbps * bus_factor(r.name, r.group_size);
    }
  }
  out.exposed_ns = length(subtract(comm_union, other));
  // Rows by time; calls keep pointing at their rows.
  std::vector<uint32_t> order(out.rows.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return out.rows[a].time_ns > out.rows[b].time_ns; });
  std::vector<uint32_t> new_index(order.size());
  std::vector<CollectiveRow> sorted;
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(std::move(out.rows[order[i]]));
  }
  out.rows = std::move(sorted);
  for (CollectiveCall& c : out.calls) c.row = new_index[c.row];
  return out;
}

}  // namespace ts::analysis
