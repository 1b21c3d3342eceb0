#pragma once
// The result of analysing one trace: plain data, filled by the analyses in this folder
// (one per file, each with its definition in its header comment), read by diagnose/ and report/.
// All times are nanoseconds, all percentages 0-100.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/event_store.h"

namespace ts::analysis {

// Step-time classes, by priority (TensorBoard plugin's definition): every ns of a step in exactly one.
struct Breakdown {
  int64_t kernel = 0, memcpy = 0, memset = 0, communication = 0, runtime = 0, dataloader = 0,
          cpu_exec = 0, other = 0;
  int64_t total() const {
    return kernel + memcpy + memset + communication + runtime + dataloader + cpu_exec + other;
  }
  Breakdown& operator+=(const Breakdown& o);
};
inline constexpr const char* kBreakdownClasses[] = {"kernel",  "memcpy",     "memset",
                                                    "communication", "runtime", "dataloader",
                                                    "cpu_exec", "other"};

// What bounds a step (step_bound.cpp, after Holistic Trace Analysis' critical-path bound
// types): every ns of a step in exactly one class.
enum BoundClass : int {
  kBoundGpuCompute,     // non-communication GPU work runs (kernels, copies, memsets)
  kBoundCommunication,  // only communication kernels run (exposed communication)
  kBoundDataLoading,    // GPU idle, host inside a DataLoader call
  kBoundCpu,            // GPU idle, host busy before the next launch call
  kBoundLaunch,         // GPU idle from the next launch call's start to its work's start
  kBoundKernelKernel,   // GPU idle although its next work was already launched
  kBoundUnknown,        // GPU idle before work whose launch call is not in the trace
  kBoundClasses
};
inline constexpr const char* kBoundClassNames[kBoundClasses] = {
    "gpu_compute", "communication", "data_loading", "cpu_bound", "launch_overhead",
    "kernel_kernel_overhead", "unknown"};

struct Step {
  int64_t number = -1;      // N of ProfilerStep#N
  int64_t start_ns = 0;
  int64_t host_start_ns = 0;  // start of the ProfilerStep event on the CPU
  int64_t host_end_ns = 0;  // end of the ProfilerStep event on the CPU
  int64_t end_ns = 0;       // extended to the end of the GPU work launched inside it
  Breakdown breakdown;
  int64_t kernels = 0;
  int64_t gpu_busy_ns = 0;  // union of GPU activity inside the step
  int64_t syncs = 0;
  int64_t mem_allocated_end = -1;  // bytes allocated (CUDA) at the step's end, -1 unknown
  int64_t bound_ns[kBoundClasses] = {};  // sums to duration() when the trace has GPU events
  int bound_by = -1;                     // BoundClass with the most time, -1 without GPU events
  int64_t duration() const { return end_ns - start_ns; }
};

struct StepSummary {
  std::vector<Step> steps;
  int64_t dropped_tail_steps = 0;  // incomplete tail steps removed
  bool synthetic = false;          // no ProfilerStep#: the whole trace is one pseudo-step
  Breakdown total;
  int64_t total_ns = 0;
  // Host time inside DataLoader calls (union, within the steps), whatever else ran meanwhile:
  // the "blocked on data" view; breakdown.dataloader is only the part nothing else covered.
  int64_t dataloader_host_ns = 0;
  int64_t median_step_ns = 0, mean_step_ns = 0, p90_step_ns = 0;
  double pct(int64_t part) const { return total_ns > 0 ? 100.0 * part / total_ns : 0.0; }
};

// Why the GPU was idle (idle_attribution.cpp has the full definition). Every idle ns of the
// analysis window lands in exactly one cause.
enum class IdleCause : uint8_t {
  Sync,          // a blocking host call: stream/device/event sync, a synchronous or pageable copy, .item()
  Launch,        // launch overhead: the host was issuing the launch the GPU waited for
  DataLoading,   // inside DataLoader.__next__
  Optimizer,     // inside Optimizer.step / zero_grad
  Memory,        // cudaMalloc / cudaFree / host-pinned allocation
  Setup,         // one-time work: compilation, lazy module loading, the first (slow) call of an op
  HostCompute,   // host code in a named op (cpu_op, user annotation, Python function)
  StreamWait,    // launched before the gap, waiting on another stream (Stream Wait Event)
  Collective,    // a collective: the host in nccl:/gloo: calls, or a queued NCCL kernel waiting for peers
  GpuOverhead,   // work already queued, a short gap: the GPU's own switch between kernels
  Untraced,      // queued behind its stream's last event, which ended as the gap began: an
                 // in-order stream does not idle there, so it ran GPU work the trace lacks
  Unattributed,  // nothing recorded that explains it (host_event says why)
};
inline constexpr int kIdleCauses = 12;
const char* idle_cause_name(IdleCause c);  // "sync", "launch", ... "gpu_overhead", "untraced", "unattributed"

// One bucket: idle time with the same cause, deepest host event, op and annotation.
struct IdleEntry {
  IdleCause cause = IdleCause::Unattributed;
  std::string host_event;  // deepest host event (runtime call, cpu_op, python_function); for
                           // Unattributed the reason ("nothing recorded on the launching thread", ...)
  std::string op;          // innermost cpu_op around it ("" none)
  std::string annotation;  // innermost user annotation or "nn.Module: X" frame ("" none)
  std::string frame;       // innermost Python frame (python_function, not a module) ("" no stacks)
  int64_t ns = 0;
  int64_t gaps = 0;        // idle gaps this bucket has time in
  double pct_of_idle = 0, pct_of_step = 0;
};
// One attributed piece of an idle gap (a gap may split into several pieces: what the host did
// changed during it). Sorted by begin, disjoint; their union is the GPU's idle time.
struct IdlePiece {
  int64_t begin = 0, end = 0;
  uint32_t entry = 0;  // index into IdleAttribution::entries
};
struct IdleAttribution {
  bool present = false;     // the trace had GPU events in the window
  int64_t idle_ns = 0;      // == GpuTime::idle_ns (sum of all entries)
  int64_t gaps = 0;         // idle gaps (between the union of GPU events)
  int64_t unattributed_ns = 0;
  int64_t by_cause_ns[kIdleCauses] = {};
  std::vector<IdleEntry> entries;  // largest first; tiny ones folded into one per cause
  std::vector<IdlePiece> pieces;
  int64_t cause_ns(IdleCause c) const { return by_cause_ns[static_cast<int>(c)]; }
};

// Bound-by summary over the kept steps (step_bound.cpp).
struct BoundSummary {
  bool present = false;                  // the trace has GPU events in the window
  int64_t total_ns[kBoundClasses] = {};  // summed over steps
  int64_t steps_by_label[kBoundClasses] = {};
  int bound_by = -1;                     // the class with the most time overall
};

struct GpuTime {
  bool present = false;  // any GPU event at all
  int devices = 0;
  int64_t span_ns = 0, busy_ns = 0, idle_ns = 0, compute_ns = 0, non_compute_ns = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;
  // HTA idle attribution (per stream, summed): host wait / kernel wait (gap < 30 µs) / other.
  int64_t idle_host_wait_ns = 0, idle_kernel_wait_ns = 0, idle_other_ns = 0;
  double utilization_pct = 0;  // union of kernels inside steps / step time (TB plugin)
  double est_sm_efficiency_pct = -1, est_occupancy_pct = -1;
  IdleAttribution attribution;  // idle_attribution.cpp
};

struct KernelRow {
  std::string name;
  int64_t count = 0, total_ns = 0, median_ns = 0;
  double share_pct = 0;  // of all kernel time
};

struct LaunchStats {
  int64_t launches = 0;  // runtime calls linked to a GPU event
  int64_t median_launch_delay_ns = 0;
  int64_t short_kernels = 0;        // kernel.dur < runtime.dur and runtime.dur <= 50 µs
  int64_t runtime_outliers = 0;     // runtime.dur > 50 µs
  int64_t launch_delay_outliers = 0;  // delay > 100 µs
  int64_t median_runtime_ns = 0;
};

struct KernelStats {
  int64_t count = 0;
  double per_step = 0;
  int64_t total_ns = 0, median_ns = 0;
  double under_10us_pct = 0;  // share of kernels (by count) shorter than 10 µs
  std::vector<KernelRow> top;
  LaunchStats launch;
  int64_t triton_kernels = 0;
};

struct CopyRow {
  std::string direction;  // HtoD, DtoH, DtoD, PtoP, Memset, other
  std::string kind;       // pageable, pinned, device, host (AMD: cannot tell), unknown
  int64_t count = 0, bytes = 0, time_ns = 0;
  double bandwidth_gbps = 0;
};
struct CopyStats {
  std::vector<CopyRow> rows;
  int64_t pageable_count = 0, pageable_bytes = 0, pageable_time_ns = 0;
  int64_t blocking_memcpy_calls = 0;  // synchronous cudaMemcpy (not Async)
  double per_step = 0;
};

struct SyncRow {
  std::string kind;  // cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
                     // cudaMemcpy, aten::item, aten::_local_scalar_dense, Stream Sync, ...
  int64_t count = 0, time_ns = 0;
};
struct SyncStats {
  std::vector<SyncRow> rows;
  int64_t count = 0, time_ns = 0;
  double per_step = 0, time_per_step_ns = 0;
  double pct_of_step = 0;
  int64_t item_calls = 0;  // aten::item / _local_scalar_dense: the .item() signature
};

struct MemoryStats {
  bool present = false;  // [memory] events seen
  std::vector<int64_t> allocated_at_step_end;
  double slope_bytes_per_step = 0;  // least-squares slope of allocated_at_step_end
  int64_t peak_allocated = 0, peak_reserved = 0;
  int64_t device_total = 0;  // from deviceProperties, 0 unknown
  double peak_reserved_pct_of_device = 0;
  bool relative = false;  // no "Total Allocated" in the trace: totals rebuilt from Bytes, relative to its start
  int device = -1;        // the CUDA device the numbers are for (the one with most [memory] events)
};

struct PrecisionStats {
  int64_t gemm_kernels = 0, gemm_time_ns = 0;
  std::map<std::string, int64_t> time_by_class_ns;  // fp32, tf32, bf16, fp16, fp8, int8, unknown
  double tensor_core_share_pct = 0;  // of GEMM/conv time
  double fp32_share_pct = 0;
  int compute_capability = 0;  // major*10+minor of device 0, 0 unknown
  struct ShapeIssue {
    std::string op, dims;
    int64_t count = 0;
  };
  std::vector<ShapeIssue> misaligned;  // half-precision GEMMs with dims not multiples of 8
  int64_t misaligned_calls = 0;
  int64_t half_gemm_calls = 0;  // half-precision GEMM/conv ops seen (the misaligned ones' denominator)
};

struct ParallelStats {
  std::string optimizer;      // e.g. "AdamW", "" unknown
  std::string optimizer_impl; // single_tensor | foreach | fused | unknown
  int64_t optimizer_kernels_per_step = 0;
  bool data_parallel = false;  // torch.nn.DataParallel
  bool ddp = false;            // DistributedDataParallel
  bool compiled = false;       // torch.compile: Triton kernels / compiled regions
  int64_t comm_kernels = 0, comm_time_ns = 0;
  double comm_pct_of_gpu = 0;
  double comm_overlap_pct = 0;  // |compute ∩ comm| / |comm|
  double comm_pct_of_step = 0;  // |comm| inside the steps / step time
  int rank = -1, world_size = -1;
  std::string backend;
};

// Collectives (collectives.cpp): one row per (collective, dtype, group size), from the
// communication kernels and the parameters PyTorch records for them.
struct CollectiveRow {
  std::string name;   // "allreduce", "broadcast", ... (PyTorch's name; else from the NCCL kernel's)
  std::string dtype;  // "" unknown
  int group_size = -1;
  int64_t count = 0;
  int64_t bytes = -1;  // message bytes summed (the larger of input and output), -1 unknown
  int64_t time_ns = 0, exposed_ns = 0;  // kernel time; the part no other GPU work overlapped
  double algbw_gbps = 0, busbw_gbps = 0;  // bytes / kernel time; x the bus factor (0 unknown)
};
// One communication kernel, for matching the same call across ranks.
struct CollectiveCall {
  int64_t step = -1;   // number of the ProfilerStep whose host interval launched it, -1 none
  int32_t ordinal = 0;  // its position among the calls of that step (or of the unstepped ones)
  uint32_t row = 0;    // index into CollectiveStats::rows
  int64_t start_ns = 0, dur_ns = 0;
};
struct CollectiveStats {
  std::vector<CollectiveRow> rows;  // most kernel time first
  int64_t count = 0, time_ns = 0;
  int64_t exposed_ns = 0;            // |communication kernels \ other GPU work| (a union)
  int64_t with_params = 0;           // calls whose name and sizes the trace recorded
  std::vector<CollectiveCall> calls;  // in start order; not in the JSON report
};

// GPU timeline per step (gpu_timeline.cpp): each drawn step in kTimelineBins equal bins,
// run-length encoded.
inline constexpr int kTimelineBins = 600, kTimelineSteps = 12;
struct TimelineRun {
  int32_t bins = 0;      // consecutive bins with these values
  int32_t busy_pct = 0;  // GPU busy share of each bin, a multiple of 10
  int32_t entry = -1;    // gpu.attribution.entries index with the most idle time; -1 no idle,
                         // -2 idle outside the GPU's active span
};
struct StepTimeline {
  int64_t number = -1, start_ns = 0, duration_ns = 0;
  std::vector<TimelineRun> runs;
};
struct GpuTimeline {
  int bins = 0;              // per step (0: no timeline)
  int64_t steps_total = 0;   // steps in the window (the timeline draws at most kTimelineSteps)
  std::vector<StepTimeline> steps;
};

struct TraceAnalysis {
  std::string path;
  trace::TraceFormat format = trace::TraceFormat::Kineto;
  uint64_t events = 0;
  uint64_t bytes = 0;
  double read_seconds = 0, analyse_seconds = 0;
  // Wall seconds of each pass of analyse() ("index", "steps", ...): for the benchmarks, not the
  // reports. The GPU passes (gpu_time, idle_attribution, gpu_timeline) come last; on a large
  // trace they ran on a second thread, beside the others.
  std::vector<std::pair<std::string, double>> pass_seconds;
  std::string device_name;
  std::vector<std::string> warnings;
  int64_t base_time_ns = 0;  // baseTimeNanoseconds (absolute time = base + ts), 0 when absent

  StepSummary steps;
  BoundSummary bound;
  GpuTime gpu;
  KernelStats kernels;
  CopyStats copies;
  SyncStats syncs;
  MemoryStats memory;
  PrecisionStats precision;
  ParallelStats parallel;
  CollectiveStats collectives;
  GpuTimeline timeline;
};

struct AnalyseOptions {
  int64_t first_step = -1, last_step = -1;  // --steps RANGE (inclusive), -1 = all
  int top = 10;
  // Threads for one trace's passes: 1 serial; 2 or more: the GPU passes on a second thread;
  // 0: two on a large trace when the machine has two cores.
  int threads = 0;
};

// Runs every analysis on one trace.
TraceAnalysis analyse(const trace::EventStore& store, const AnalyseOptions& opt = {});

// Several traces (one per rank): see multi_trace.cpp for the definitions.
struct RankRow {
  std::string path;
  int trace = -1;                 // index into MultiTraceAnalysis::traces
  int rank = -1;                  // distributedInfo.rank, else "rank<N>" in the file name, else the position
  int64_t steps = 0;
  int64_t median_step_ns = 0;
  double comm_ns_per_step = 0;    // |communication kernels| per step
  double idle_pct = 0;            // GPU idle % of span
  double wait_ns_per_step = 0;    // collective time beyond the straggler's (waiting for it)
  bool straggler = false;
  int64_t last_arrivals = 0;            // matched collectives this rank arrived at last
  double collective_wait_ns_per_step = 0;  // its time in matched collectives waiting for the last rank
};
// Who arrives last at the collectives of one job (multi_trace.cpp).
struct CollectiveArrival {
  int64_t matched_calls = 0;  // calls found on every rank (same step, position and collective)
  int last_rank = -1;         // the rank that arrives last most often, -1 none
  int64_t last_count = 0;     // in how many matched calls it did
  double others_wait_ns_per_step = 0;  // in those calls, the other ranks' mean wait for it, per step
  std::string note;           // why nothing was matched, when so
};
struct MultiTraceAnalysis {
  std::vector<TraceAnalysis> traces;  // in the order of the paths given
  std::vector<RankRow> ranks;         // sorted by rank
  // Whether the traces are the ranks of one job, so that comparing them means something; and why.
  // Two runs of a script (before/after a change) are not ranks: no straggler among them.
  bool one_job = false;
  std::string job_basis;
  int straggler_rank = -1;            // rank with the largest median step time (-1: < 2 ranks of one job)
  int64_t straggler_gap_ns = 0;       // its median step time - the fastest rank's
  CollectiveArrival arrival;
};
// Reads and analyses each trace in its own thread (threads = 0: hardware concurrency), keeping
// at most `threads` stores in memory at once, and fewer when their estimated memory
// (trace::estimate_read_memory) would pass 3/4 of the memory available (one trace always runs).
// A directory expands to its *.json / *.json.gz.
// Progress (optional) is called with (done, total) after each trace. With `left_out`, a trace the
// reader finds cut off (trace::CutOffError: written in part) is left out and named there
// ("<path>: cut off (...), left out") instead of failing the whole analysis: for a job
// directory, where a node that stopped mid-write leaves one.
MultiTraceAnalysis analyse_traces(const std::vector<std::string>& paths,
                                  const AnalyseOptions& opt = {}, int threads = 0,
                                  const std::function<void(size_t, size_t)>& progress = {},
                                  std::vector<std::string>* left_out = nullptr);
// The rank a file name gives ("trace_rank1.pt.trace.json", "rank-0.Apr_03...json"), -1 if none.
int rank_from_file_name(const std::string& path);
// Builds the per-rank table from analyses already made (used by analyse_traces).
MultiTraceAnalysis compare_ranks(std::vector<TraceAnalysis> traces);
// Expands directories into their trace files (sorted); files pass through. A job directory
// (`trainscope run --job-dir`: no trace at its top, one folder per node) gives every node's
// trace*.json[.gz], and sets `job_dir` (its traces may be cut off: analyse_traces' left_out).
std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths, bool* job_dir = nullptr);

}  // namespace ts::analysis
