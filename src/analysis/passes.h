#pragma once
// The analyses, one per file (each file's header comment holds its definition).
// analyse() in analyse.cpp runs them in this order: steps first (it sets the window
// every other analysis counts in), then the rest, which only read the index and steps.
#include "analysis/trace_analysis.h"
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/trace_index.h"

namespace ts::analysis {

// ASCII lower case: kernel, op and collective names are matched case-blind.
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StepSummary analyse_steps(TraceIndex& idx, const AnalyseOptions& opt);  // sets idx window
void analyse_breakdown(const TraceIndex& idx, StepSummary& steps);
GpuTime analyse_gpu_time(const TraceIndex& idx, StepSummary& steps);
void analyse_idle_attribution(const TraceIndex& idx, const StepSummary& steps, GpuTime& gpu);
KernelStats analyse_kernels(const TraceIndex& idx, StepSummary& steps, int top);
LaunchStats analyse_launch(const TraceIndex& idx);
CopyStats analyse_copies(const TraceIndex& idx, const StepSummary& steps);
SyncStats analyse_syncs(const TraceIndex& idx, StepSummary& steps);
MemoryStats analyse_memory(const TraceIndex& idx, StepSummary& steps);
PrecisionStats analyse_precision(const TraceIndex& idx);
ParallelStats analyse_parallel(const TraceIndex& idx, const StepSummary& steps);
BoundSummary analyse_step_bound(const TraceIndex& idx, StepSummary& steps);
CollectiveStats analyse_collectives(const TraceIndex& idx, const StepSummary& steps);
// After idle attribution (it reads gpu.attribution.pieces).
GpuTimeline analyse_gpu_timeline(const TraceIndex& idx, const StepSummary& steps, const GpuTime& gpu);

// NCCL kernel name -> collective ("ncclDevKernel_AllGather_RING_LL" -> "allgather"), "" if none.
std::string collective_from_kernel_name(std::string_view name);
// Bytes per element of a PyTorch dtype name ("Float" 4, "BFloat16" 2), 0 unknown.
int dtype_bytes(std::string_view dtype);
// NCCL's bus-bandwidth factor for a collective among n ranks (0 unknown).
double bus_factor(std::string_view collective, int n);

// "Memcpy HtoD (Pageable -> Device)" -> {"HtoD", "pageable"} (copies.cpp has the rules).
std::pair<std::string, std::string> parse_copy_name(std::string_view name);

// "Input Dims" JSON text -> one shape per argument (non-tensor arguments: empty shape).
std::vector<std::vector<int64_t>> parse_input_dims(std::string_view text);

// Disjoint [start, end) of each kept step, in order.
Intervals step_intervals(const StepSummary& steps);
// Index of the step whose [start, end) holds t, or -1.
int step_of(const StepSummary& steps, int64_t t);

}  // namespace ts::analysis
