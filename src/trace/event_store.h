#pragma once
// The columnar event store: what the reader fills and every analysis reads.
//
// One row per trace event, one std::vector per field, so an analysis that looks at
// timestamps and categories touches only those columns. Strings (names, thread names,
// Input Dims) are interned once. Only the args the analyses need are kept; everything
// else in a trace is skipped by the reader. Flow events (ph s/t/f) are only counted
// (meta.flow_events) unless ReadOptions::keep_flows asks for them.
//
// Time: ts_ns/dur_ns are the trace's own microsecond values converted to integer
// nanoseconds from their decimal text (16-digit epoch µs keep their ns fraction).
// When the trace has baseTimeNanoseconds, ts is relative to it: absolute = base + ts.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "trace/string_pool.h"

namespace ts::trace {

// Categories, matched case-insensitively; the 2021 names map onto the modern ones
// (Operator -> CpuOp, Runtime -> CudaRuntime, Kernel, Memcpy, Memset).
// The reader also sets: Memory for every event named "[memory]" (whatever its cat), and
// CpuOp for ph:"X" events without cat in the bare-array form (it records only operators and
// record_function ranges such as ProfilerStep#N).
enum class Category : uint8_t {
  Unknown = 0,
  CpuOp,
  UserAnnotation,
  GpuUserAnnotation,
  PythonFunction,
  CudaRuntime,
  CudaDriver,
  Kernel,
  GpuMemcpy,
  GpuMemset,
  CudaSync,
  CpuInstantEvent,
  Overhead,
  Trace,
  FlowLaunch,   // ac2g, async_cpu_to_gpu, async "launch"
  FlowFwdBwd,   // fwdbwd
  Memory,       // "[memory]" instant events (they carry no usable cat)
  Other,
};
const char* category_name(Category c);
Category parse_category(std::string_view cat);  // case-insensitive

enum class Phase : uint8_t {
  Complete,    // X
  Instant,     // i / I
  Begin,       // B
  End,         // E
  Counter,     // C
  FlowStart,   // s
  FlowStep,    // t
  FlowEnd,     // f
  Metadata,    // M
  Other,
};

inline constexpr uint32_t kNoComm = std::numeric_limits<uint32_t>::max();

// Args kept for the few events that need them (kernels, copies, memsets, [memory], and any
// event carrying a collective's parameters).
struct EventArgs {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = -1;
  int32_t shared_memory = -1;
  float blocks_per_sm = -1;
  float warps_per_sm = -1;
  float occupancy_pct = -1;      // "est. achieved occupancy %"
  int64_t bytes = -1;            // memcpy/memset "bytes"; [memory] "Bytes" (negative on free)
  int64_t total_allocated = -1;  // [memory] "Total Allocated"
  int64_t total_reserved = -1;   // [memory] "Total Reserved"
  int32_t device_type = -1;      // [memory] "Device Type" (1 = CUDA)
  int32_t device_id = -1;        // [memory] "Device Id", kernel "device"
  float bandwidth_gbps = -1;     // "memory bandwidth (GB/s)"
  uint32_t comm = kNoComm;  // index into comm_args, or kNoComm
};

// A collective's parameters, as PyTorch records them on `record_param_comms` cpu_ops and (since
// 2.x) on the NCCL kernels themselves. Strings are interned ids (0 = absent).
struct CommArgs {
  uint32_t collective = 0;   // "Collective name": allreduce, broadcast, allgather, send, ...
  uint32_t dtype = 0;        // "dtype": Float, BFloat16, ...
  uint32_t group_name = 0;   // "Process Group Name"
  uint32_t group_ranks = 0;  // "Process Group Ranks", as written ("[0, 1]")
  int64_t in_nelems = -1, out_nelems = -1;  // "In msg nelems", "Out msg nelems"
  int32_t group_size = -1;   // "Group size"
};

struct DeviceProperties {
  int id = -1;
  std::string name;
  int64_t total_global_mem = 0;
  int compute_major = 0, compute_minor = 0;
  int num_sms = 0;
  int max_threads_per_sm = 0;
  int warp_size = 0;
};

struct DistributedInfo {
  bool present = false;
  std::string backend;
  int rank = -1;
  int world_size = -1;
};

enum class TraceFormat : uint8_t {
  Kineto,      // {"traceEvents": [...]} with modern categories
  Kineto2021,  // same envelope, cats Operator/Runtime/Kernel/Memcpy
  BareArray,   // [ {...}, ... ] from PyTorch without Kineto (pid "CPU functions", no cat)
};

struct TraceMeta {
  TraceFormat format = TraceFormat::Kineto;
  int schema_version = -1;
  int64_t base_time_ns = 0;  // baseTimeNanoseconds, 0 when absent
  std::vector<DeviceProperties> devices;
  DistributedInfo distributed;
  bool record_shapes = false;
  bool profile_memory = false;
  std::string cuda_runtime_version, cuda_driver_version, cupti_version;
  bool is_rocm = false;  // AMD/ROCm trace (hip* runtime names)
  uint64_t input_bytes = 0;  // uncompressed JSON bytes read
  uint64_t flow_events = 0;  // flow events read but not stored (ReadOptions::keep_flows)
};

inline constexpr int64_t kNone = -1;
inline constexpr uint32_t kNoArgs = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kNoString = 0;  // string id 0 is the empty string
// Rows are numbered in 32 bits (the analyses' row lists halve their memory that way), with
// UINT32_MAX kept for "no row": a trace of more events (a terabyte of JSON) is refused.
inline constexpr uint64_t kMaxRows = UINT32_MAX - 1;

// pid/tid: numbers as written (GPU events: pid = device, tid = stream; real traces have negative
// tids, e.g. -247463936). A non-numeric pid/tid ("CPU functions", "stream 7 ") is interned and
// stored as kNamedIdBase + string id, a range no written number reaches (below -2^63 + 2^32);
// a numeric string ("25738") is stored as its number.
inline constexpr int64_t kNamedIdBase = std::numeric_limits<int64_t>::min();
class EventStore {
 public:
  // Columns (same length). Public for analyses that scan them; append only through add().
  std::vector<uint32_t> name;
  std::vector<Category> cat;
  std::vector<Phase> ph;
  std::vector<uint32_t> thread;      // index into threads: the row's (pid, tid)
  std::vector<int64_t> ts_ns;
  std::vector<int64_t> dur_ns;       // 0 for instants
  std::vector<int64_t> correlation;  // kNone when absent (flows: the flow id)
  std::vector<int64_t> external_id;  // "External id" / "external id", kNone when absent
  std::vector<uint32_t> args;        // index into args_table or kNoArgs
  std::vector<uint32_t> input_dims;  // interned raw JSON text of "Input Dims", kNoString if none
  std::vector<uint32_t> input_types; // interned raw JSON text of "Input type", kNoString if none

  std::vector<EventArgs> args_table;
  std::vector<CommArgs> comm_args;  // EventArgs::comm points here
  // The distinct (pid, tid) pairs, in order of first use. A trace has a few dozen threads and
  // streams: one 4-byte index per row instead of two 8-byte columns took 18% off every row
  // (the memory the reader fills and the pages it faults; docs/BENCHMARKS.md, session 12).
  struct ThreadRef {
    int64_t pid, tid;
    bool operator==(const ThreadRef&) const = default;
  };
  std::vector<ThreadRef> threads;
  StringPool strings;
  TraceMeta meta;

  size_t size() const { return name.size(); }
  // Every event of the trace, stored or only counted (flows, unless kept).
  uint64_t events_read() const { return name.size() + meta.flow_events; }
  std::string_view name_of(size_t i) const { return strings.view(name[i]); }
  const EventArgs* args_of(size_t i) const {
    return args[i] == kNoArgs ? nullptr : &args_table[args[i]];
  }
  const CommArgs* comm_of(size_t i) const {
    const EventArgs* a = args_of(i);
    return a && a->comm != kNoArgs ? &comm_args[a->comm] : nullptr;
  }
  int64_t end_ns(size_t i) const { return ts_ns[i] + dur_ns[i]; }
  int64_t pid(size_t i) const { return threads[thread[i]].pid; }
  int64_t tid(size_t i) const { return threads[thread[i]].tid; }
  // The index of (pid, tid) in threads, added there if new. Every event asks, so a small
  // direct-mapped cache answers whatever order threads and streams come in (the last two pairs
  // would miss 0.16% of the recommender trace's rows, but every row where more than two
  // streams take turns).
  uint32_t thread_of(int64_t pid_v, int64_t tid_v) {
    const ThreadSlot& c = thread_cache_[thread_slot(pid_v, tid_v)];
    if (c.index != UINT32_MAX && c.pid == pid_v && c.tid == tid_v) return c.index;
    return find_thread(pid_v, tid_v);
  }
  static bool is_named_id(int64_t pid_or_tid) {
    return static_cast<uint64_t>(pid_or_tid) - static_cast<uint64_t>(kNamedIdBase) <= UINT32_MAX;
  }
  static int64_t named_id(uint32_t string_id) { return kNamedIdBase + static_cast<int64_t>(string_id); }
  std::string_view id_name(int64_t pid_or_tid) const {
    return strings.view(static_cast<uint32_t>(pid_or_tid - kNamedIdBase));
  }

  // Appends one event and returns its row.
  size_t add(uint32_t name_id, Category c, Phase p, int64_t pid_v, int64_t tid_v, int64_t ts,
             int64_t dur, int64_t corr = kNone, int64_t ext = kNone, uint32_t args_idx = kNoArgs,
             uint32_t dims = kNoString, uint32_t types = kNoString);
  uint32_t add_args(const EventArgs& a) {
    args_table.push_back(a);
    return static_cast<uint32_t>(args_table.size() - 1);
  }
  void reserve(size_t n);
  // Drops every row, name and string but keeps the columns' memory (the parallel reader reuses
  // one store per chunk it parses).
  void clear_rows();

  // Process/thread names from ph:"M" metadata events.
  struct NameEntry {
    int64_t pid, tid;  // tid = kNone for process names
    uint32_t name;
  };
  std::vector<NameEntry> process_names, thread_names;

 private:
  uint32_t find_thread(int64_t pid_v, int64_t tid_v);
  struct ThreadSlot {
    int64_t pid = 0, tid = 0;
    uint32_t index = UINT32_MAX;  // UINT32_MAX: empty
  };
  static constexpr int kThreadCacheBits = 6;
  static size_t thread_slot(int64_t pid_v, int64_t tid_v) {
    const uint64_t h = static_cast<uint64_t>(pid_v) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(tid_v) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>((h ^ (h >> 29)) >> (64 - kThreadCacheBits));
  }
  ThreadSlot thread_cache_[size_t{1} << kThreadCacheBits];
};

// Appends `from`'s rows to `into` (ids of strings and args renumbered to `into`'s), then clears
// `from` (clear_rows). Appending the stores of consecutive pieces of a trace in file order gives
// the store one reader would have made of the whole: strings get ids in order of first use.
void append_store(EventStore& into, EventStore& from);

}  // namespace ts::trace
