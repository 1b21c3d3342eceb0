#pragma once
// TraceIndex: what every analysis needs from an EventStore, computed once per trace:
// row lists per kind (sorted by start), the runtime call that launched each GPU event
// (by correlation id), per-name flags (interned names are classified once, not per event),
// and the analysis window set by the step analysis.
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/event_store.h"

namespace ts::analysis {

inline constexpr uint32_t kNoRow = UINT32_MAX;

// Flags per interned name.
enum NameFlag : uint16_t {
  kCommKernel = 1 << 0,     // HTA's COMMUNICATION class: ^nccl | ncclKernel | ^hccl (+ rccl, ncclDevKernel)
  kTritonKernel = 1 << 1,   // triton_* (Inductor) kernels
  kDataLoader = 1 << 2,     // enumerate(DataLoader)#*.__next__, enumerate(DataPipe)#*
  kProfilerStep = 1 << 3,   // ProfilerStep#N
  kCommOp = 1 << 4,         // host-side collective annotations: nccl:*, gloo:*
  kCompiledRegion = 1 << 5, // Torch-Compiled Region, CompiledFunction, TorchDynamo
  // What the passes ask of names in loops over every host event or runtime call (a string test
  // per event was a third of those passes' time on a large trace).
  kRuntimeSync = 1 << 6,    // is_blocking_sync_call
  kBlockingMemcpy = 1 << 7, // is_blocking_memcpy_call: a synchronous copy
  kItemOp = 1 << 8,         // aten::item
  kScalarDense = 1 << 9,    // aten::_local_scalar_dense
  kOptimizerStep = 1 << 10, // Optimizer.step#*
  kAtenOp = 1 << 11,        // aten::*
  kGemmOp = 1 << 12,        // aten::mm, bmm, addmm, baddbmm, convolution
};

struct TraceIndex {
  explicit TraceIndex(const trace::EventStore& store);

  const trace::EventStore& s;
  std::vector<uint32_t> kernels, memcpys, memsets;  // GPU activity, each sorted by ts
  std::vector<uint32_t> gpu;        // kernels + memcpys + memsets, sorted by ts
  std::vector<uint32_t> runtime;    // cuda_runtime + cuda_driver complete events, sorted by ts
  std::vector<uint32_t> host_ops;   // cpu_op + user_annotation complete events, sorted by ts
  std::vector<uint32_t> python;     // python_function complete events
  std::vector<uint32_t> memory;     // [memory] instants, sorted by ts
  std::vector<uint32_t> cuda_sync;  // cuda_sync events (GPU timeline), sorted by ts
  std::vector<uint16_t> name_flags;  // by string id

  // The analysis window: [begin, end) of the kept steps (set by analyse_steps).
  int64_t window_begin = INT64_MIN, window_end = INT64_MAX;

  // Whether row's name has any of the flags in `mask` (NameFlag values or'ed).
  bool flag(uint32_t row, uint16_t mask) const { return (name_flags[s.name[row]] & mask) != 0; }
  // The first runtime/driver call (in time order) with correlation id `corr`, or kNoRow.
  uint32_t runtime_of_corr(int64_t corr) const {
    if (!corr_dense_.empty()) {
      const uint64_t at = static_cast<uint64_t>(corr) - static_cast<uint64_t>(corr_min_);
      return at < corr_dense_.size() ? corr_dense_[at] : kNoRow;
    }
    return runtime_of_sparse_corr(corr);
  }
  // Runtime/driver row that launched GPU row `row` (kernel, memcpy, memset), or kNoRow. Looked
  // up by its correlation id on each call: a table by row would be fresh memory for every row.
  uint32_t launcher(uint32_t row) const {
    const int64_t c = s.correlation[row];
    return c == trace::kNone ? kNoRow : runtime_of_corr(c);
  }
  bool in_window(uint32_t row) const {
    return s.ts_ns[row] >= window_begin && s.ts_ns[row] < window_end;
  }
  // Rows of `list` (sorted by start) whose start lies in the window: a part of the list itself,
  // not a copy (each pass that took a copy wrote a fresh list the size of the GPU list).
  std::span<const uint32_t> windowed(const std::vector<uint32_t>& list) const;

 private:
  uint32_t runtime_of_sparse_corr(int64_t corr) const;
  // Runtime row by correlation id: dense table from corr_min_, else sorted (id, row) pairs.
  int64_t corr_min_ = 0;
  std::vector<uint32_t> corr_dense_;
  std::vector<std::pair<int64_t, uint32_t>> corr_runtime_;
};

uint16_t classify_name(std::string_view name);
// Sorts rows by (start, row).
void sort_by_start(std::vector<uint32_t>& rows, const std::vector<int64_t>& ts);
// sort_by_start's path for lists in file order (ascending rows): an LSD radix sort by start,
// stable, so equal starts stay in row order. False, rows untouched, when the list is not
// ascending or its span of starts and its length need more than 64 bits together.
bool radix_sort_by_start(std::vector<uint32_t>& rows, const std::vector<int64_t>& ts);
bool is_comm_kernel_name(std::string_view name);
// Runtime and driver calls that block the host until the GPU is done, by name: the one
// definition the index's flags (syncs, copies) and idle attribution share.
//   sync: cuda/hip/cu Stream-, Device-, EventSynchronize and cuCtxSynchronize.
//   blocking copy: cudaMemcpy* / hipMemcpy* / cuMemcpy* without "Async"; hipMemcpyWithStream
//   counts (ROCm: hipMemcpyAsync + hipStreamSynchronize, a sync API; PyTorch on ROCm uses it
//   for blocking copies).
bool is_blocking_sync_call(std::string_view name);
bool is_memcpy_call(std::string_view name);
bool is_blocking_memcpy_call(std::string_view name);

}  // namespace ts::analysis
