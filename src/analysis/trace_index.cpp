#include "analysis/trace_index.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace ts::analysis {

using trace::Category;
using trace::Phase;

bool is_blocking_sync_call(std::string_view n) {
  return n.ends_with("StreamSynchronize") || n.ends_with("DeviceSynchronize") || n.ends_with("EventSynchronize") ||
         n == "cuCtxSynchronize";
}

bool is_memcpy_call(std::string_view n) {
  return n.starts_with("cudaMemcpy") || n.starts_with("hipMemcpy") || n.starts_with("cuMemcpy");
}

bool is_blocking_memcpy_call(std::string_view n) {
  return is_memcpy_call(n) && n.find("Async") == std::string_view::npos;
}

bool is_comm_kernel_name(std::string_view n) {
  if (n.starts_with("void ")) n.remove_prefix(5);
  return n.starts_with("nccl") || n.starts_with("hccl") || n.starts_with("rccl") ||
         n.find("ncclKernel") != std::string_view::npos ||
         n.find("ncclDevKernel") != std::string_view::npos;
}

uint16_t classify_name(std::string_view n) {
  uint16_t f = 0;
  if (is_comm_kernel_name(n)) f |= kCommKernel;
  if (n.starts_with("triton_") || n.starts_with("triton__")) f |= kTritonKernel;
  if ((n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__")) ||
      n.starts_with("enumerate(DataPipe)#"))
    f |= kDataLoader;
  if (n.starts_with("ProfilerStep#")) f |= kProfilerStep;
  if (n.starts_with("nccl:") || n.starts_with("gloo:")) f |= kCommOp;
  if (n.starts_with("Torch-Compiled Region") || n.starts_with("CompiledFunction") ||
      n.starts_with("TorchDynamo") || n.starts_with("## Call CompiledFxGraph"))
    f |= kCompiledRegion;
  if (is_blocking_sync_call(n)) f |= kRuntimeSync;
  if (is_blocking_memcpy_call(n)) f |= kBlockingMemcpy;
  if (n == "aten::item") f |= kItemOp;
  if (n == "aten::_local_scalar_dense") f |= kScalarDense;
  if (n.starts_with("Optimizer.step#")) f |= kOptimizerStep;
  if (n.starts_with("aten::")) f |= kAtenOp;
  if (n == "aten::mm" || n == "aten::bmm" || n == "aten::addmm" || n == "aten::baddbmm" || n == "aten::convolution")
    f |= kGemmOp;
  return f;
}

bool radix_sort_by_start(std::vector<uint32_t>& rows, const std::vector<int64_t>& ts) {
  const size_t n = rows.size();
  if (n == 0 || n >= (size_t{1} << 32)) return n == 0;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && rows[i] <= rows[i - 1]) return false;
    lo = std::min(lo, ts[rows[i]]);
    hi = std::max(hi, ts[rows[i]]);
  }
  // Keys: (start - earliest) above the position in the list; positions < 2^pos_bits.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  const int key_bits = span ? 64 - __builtin_clzll(span) : 0;
  const int pos_bits = 64 - __builtin_clzll(n);
  if (key_bits + pos_bits > 64) return false;
  std::vector<uint64_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i)
    a[i] = ((static_cast<uint64_t>(ts[rows[i]]) - static_cast<uint64_t>(lo)) << pos_bits) | i;
  // 11-bit digits of the start only, lowest first; each pass is stable, so equal starts keep
  // their positions' order. A digit every key shares is skipped.
  constexpr int kDigit = 11;
  constexpr uint64_t kMask = (1u << kDigit) - 1;
  std::vector<size_t> count(size_t{1} << kDigit);
  for (int shift = pos_bits; shift < pos_bits + key_bits; shift += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t v : a) ++count[(v >> shift) & kMask];
    if (count[(a[0] >> shift) & kMask] == n) continue;
    size_t sum = 0;
    for (size_t& c : count) sum += std::exchange(c, sum);
    for (uint64_t v : a) b[count[(v >> shift) & kMask]++] = v;
    a.swap(b);
  }
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = rows[a[i] & pos_mask];
  rows.swap(out);
  return true;
}

void sort_by_start(std::vector<uint32_t>& rows, const std::vector<int64_t>& ts) {
  auto less = [&ts](uint32_t a, uint32_t b) { return ts[a] != ts[b] ? ts[a] < ts[b] : a < b; };
  // Row lists come in file order, which Kineto writes as a few long time-ordered runs (per
  // thread, per buffer flush): merging the runs costs n log(runs) instead of n log(n).
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < rows.size(); ++i)
    if (less(rows[i], rows[i - 1])) bounds.push_back(i);
  if (bounds.size() == 1) return;
  if (bounds.size() > rows.size() / 8) {
    // Many short runs (the 2021 form writes operators as they end). A list in file order is
    // radix-sorted by start (27 ms -> 6-12 ms on 355 k operators); otherwise sort (start, row)
    // keys, which stay in cache, rather than rows compared through the timestamp column.
    if (radix_sort_by_start(rows, ts)) return;
    std::vector<std::pair<int64_t, uint32_t>> keys(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) keys[i] = {ts[rows[i]], rows[i]};
    std::sort(keys.begin(), keys.end());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = keys[i].second;
    return;
  }
  bounds.push_back(rows.size());
  std::vector<uint32_t> buf(rows.size());
  while (bounds.size() > 2) {  // merge neighbouring runs pairwise until one is left
    std::vector<size_t> next{0};
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      const auto a = rows.begin() + bounds[k], m = rows.begin() + bounds[k + 1];
      if (k + 2 < bounds.size()) {
        std::merge(a, m, m, rows.begin() + bounds[k + 2], buf.begin() + bounds[k], less);
        next.push_back(bounds[k + 2]);
      } else {
        std::copy(a, m, buf.begin() + bounds[k]);
        next.push_back(bounds[k + 1]);
      }
    }
    rows.swap(buf);
    bounds.swap(next);
  }
}

// Shorter lists sort faster than a thread starts.
constexpr size_t kParallelSortMin = 200'000;
// Below this many rows the lists are dealt on one thread.
constexpr size_t kParallelDealMin = 400'000;

TraceIndex::TraceIndex(const trace::EventStore& store) : s(store) {
  name_flags.resize(s.strings.size());
  for (uint32_t id = 0; id < s.strings.size(); ++id) name_flags[id] = classify_name(s.strings.view(id));

  // The list each row goes to (or none), counted first so every list is allocated once at its
  // size: growing by doubling would copy the lists and touch twice their memory. The list is
  // looked up in a table by (category, complete or not) and written without a branch: rows of
  // every kind interleave, so a branch per row would be mispredicted half of the time.
  const bool bare = s.meta.format == trace::TraceFormat::BareArray;
  std::vector<uint32_t>* const lists[] = {&kernels, &memcpys, &memsets, &runtime, &host_ops, &python, &memory, &cuda_sync};
  enum : uint8_t { kK, kMc, kMs, kRt, kHost, kPy, kMem, kSync, kNone, kLists = kNone + 1 };
  auto list_of = [bare](Category c, Phase p) -> uint8_t {
    if (c == Category::Memory) return kMem;
    if (p != Phase::Complete) return kNone;
    switch (c) {
      case Category::Kernel: return kK;
      case Category::GpuMemcpy: return kMc;
      case Category::GpuMemset: return kMs;
      case Category::CudaRuntime:
      case Category::CudaDriver: return kRt;
      case Category::CpuOp:
      case Category::UserAnnotation: return kHost;
      case Category::PythonFunction: return kPy;
      case Category::CudaSync: return kSync;
      // Bare-array traces (PyTorch without Kineto) carry no cat: every X event is a host op.
      case Category::Unknown: return bare ? kHost : kNone;
      default: return kNone;
    }
  };
  uint8_t table[256][2];  // [category][phase is Complete]
  for (int c = 0; c < 256; ++c)
    for (int x = 0; x < 2; ++x)
      table[c][x] = list_of(static_cast<Category>(c), x ? Phase::Complete : Phase::Instant);
  const size_t n = s.size();
  const Category* cat = s.cat.data();
  const Phase* ph = s.ph.data();
  auto list_at = [&](size_t i) { return table[static_cast<uint8_t>(cat[i])][ph[i] == Phase::Complete]; };
  // Rows are counted and dealt in halves, the second on another thread on large traces: this
  // part runs before anything else can start.
  const bool two = n >= kParallelDealMin && std::thread::hardware_concurrency() > 1;
  const size_t half = two ? n / 2 : n;
  size_t count[2][kLists] = {};
  auto count_rows = [&](int h, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) ++count[h][list_at(i)];
  };
  uint32_t* out[2][kLists];
  uint32_t sink[2] = {0, 0};  // rows of no list are written here, again and again
  auto deal_rows = [&](int h, size_t from, size_t to) {
    uint32_t* o[kLists];
    std::copy(std::begin(out[h]), std::end(out[h]), o);
    for (size_t i = from; i < to; ++i) {
      const uint8_t l = list_at(i);
      *o[l] = static_cast<uint32_t>(i);
      o[l] += l != kNone;
    }
  };
  auto in_halves = [&](auto work) {
    std::thread second;
    if (two) second = std::thread([&] { work(1, half, n); });
    work(0, 0, half);
    if (second.joinable()) second.join();
  };
  in_halves(count_rows);
  for (int l = 0; l < kNone; ++l) {
    lists[l]->resize(count[0][l] + count[1][l]);
    out[0][l] = lists[l]->data();
    out[1][l] = lists[l]->data() + count[0][l];
  }
  out[0][kNone] = &sink[0];
  out[1][kNone] = &sink[1];
  in_halves(deal_rows);
  {
    // The host ops are the longest list: sorted on a second thread on large traces.
    std::thread host;
    if (host_ops.size() >= kParallelSortMin && std::thread::hardware_concurrency() > 1)
      host = std::thread([this] { sort_by_start(host_ops, s.ts_ns); });
    for (auto* v : lists)
      if (v != &host_ops || !host.joinable()) sort_by_start(*v, s.ts_ns);
    // Correlation ids count up per process, so they are dense: a table indexed by id - min is
    // smaller and faster than a hash map or a sort. Sparse ids fall back to a sorted vector.
    // Either way the first call in time order wins (`runtime` is in time order).
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t with_corr = 0;
    for (uint32_t r : runtime)
      if (const int64_t c = s.correlation[r]; c != trace::kNone) lo = std::min(lo, c), hi = std::max(hi, c), ++with_corr;
    // (The span in unsigned arithmetic: ids at both ends of int64 must not overflow it.)
    if (with_corr > 0 && static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) < 4 * with_corr + 1024) {
      corr_min_ = lo;
      corr_dense_.assign(static_cast<size_t>(hi - lo) + 1, kNoRow);
      for (uint32_t r : runtime)
        if (const int64_t c = s.correlation[r]; c != trace::kNone && corr_dense_[c - lo] == kNoRow) corr_dense_[c - lo] = r;
    } else if (with_corr > 0) {
      std::vector<std::pair<int64_t, uint32_t>> by_corr;  // (id, position in runtime)
      by_corr.reserve(with_corr);
      for (uint32_t i = 0; i < runtime.size(); ++i)
        if (s.correlation[runtime[i]] != trace::kNone) by_corr.push_back({s.correlation[runtime[i]], i});
      std::sort(by_corr.begin(), by_corr.end());
      corr_runtime_.reserve(by_corr.size());
      for (const auto& [corr, i] : by_corr)
        if (corr_runtime_.empty() || corr_runtime_.back().first != corr) corr_runtime_.push_back({corr, runtime[i]});
    }
    gpu.reserve(kernels.size() + memcpys.size() + memsets.size());
    gpu.insert(gpu.end(), kernels.begin(), kernels.end());
    gpu.insert(gpu.end(), memcpys.begin(), memcpys.end());
    gpu.insert(gpu.end(), memsets.begin(), memsets.end());
    sort_by_start(gpu, s.ts_ns);
    if (host.joinable()) host.join();
  }
}

uint32_t TraceIndex::runtime_of_sparse_corr(int64_t corr) const {
  auto it = std::lower_bound(corr_runtime_.begin(), corr_runtime_.end(), std::pair<int64_t, uint32_t>{corr, 0});
  return it != corr_runtime_.end() && it->first == corr ? it->second : kNoRow;
}


std::span<const uint32_t> TraceIndex::windowed(const std::vector<uint32_t>& list) const {
  auto starts_before = [&](uint32_t r, int64_t t) { return s.ts_ns[r] < t; };
  const auto b = std::lower_bound(list.begin(), list.end(), window_begin, starts_before);
  const auto e = std::lower_bound(b, list.end(), window_end, starts_before);
  return {b, e};
}

}  // namespace ts::analysis
