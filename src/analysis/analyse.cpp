// analyse(): runs every analysis on one trace. Steps first (they set the window the others
// count in), then each analysis in its own file; they share one TraceIndex.
//
// On a large trace the GPU passes (GPU time, idle attribution, GPU timeline: about half the
// time) run on a second thread beside the others. That is safe because the passes only read the
// index and the store, and the two groups write disjoint fields of the steps: gpu_busy_ns on the
// GPU side; breakdown, kernels, syncs, mem_allocated_end and bound_* on the other.
#include <chrono>
#include <exception>
#include <thread>
#include <fmt/format.h>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {

// Past this share of the idle time, work missing from the trace ("untraced" idle) is worth a
// warning: the trace's idle figures then overstate how long the GPU really waited.
constexpr double kUntracedWarnShare = 0.10;
// Below this many events a second thread costs more than it saves (its start is ~50 µs; the
// passes run at several million events per second).
constexpr size_t kParallelMinEvents = 100'000;

// Wall time of consecutive passes, appended to `into`.
class Laps {
 public:
  explicit Laps(std::vector<std::pair<std::string, double>>& into) : into_(into) {}
  void operator()(const char* pass) {
    const auto now = std::chrono::steady_clock::now();
    into_.emplace_back(pass, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  std::vector<std::pair<std::string, double>>& into_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

TraceAnalysis analyse(const trace::EventStore& store, const AnalyseOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  TraceAnalysis a;
  a.format = store.meta.format;
  a.events = store.events_read();
  a.bytes = store.meta.input_bytes;
  a.base_time_ns = store.meta.base_time_ns;
  if (!store.meta.devices.empty()) a.device_name = store.meta.devices.front().name;

  Laps done(a.pass_seconds);
  TraceIndex idx(store);
  done("index");
  a.steps = analyse_steps(idx, opt);
  done("steps");
  if (a.steps.steps.empty()) {
    a.warnings.push_back(opt.first_step >= 0 || opt.last_step >= 0
                             ? "no step in the requested range"
                             : "no timed events: nothing to analyse");
  }
  if (a.steps.synthetic) a.warnings.push_back("no ProfilerStep# events: the whole trace is analysed as one step");
  if (a.steps.dropped_tail_steps > 0)
    a.warnings.push_back("dropped " + std::to_string(a.steps.dropped_tail_steps) +
                         " incomplete tail step(s): they launched too little GPU work");
  if (idx.gpu.empty()) a.warnings.push_back("no GPU events: a CPU-only trace");

  std::vector<std::pair<std::string, double>> gpu_laps;
  std::exception_ptr gpu_error;
  auto gpu_passes = [&] {
    try {
      Laps lap(gpu_laps);
      a.gpu = analyse_gpu_time(idx, a.steps);
      lap("gpu_time");
      analyse_idle_attribution(idx, a.steps, a.gpu);
      lap("idle_attribution");
      a.timeline = analyse_gpu_timeline(idx, a.steps, a.gpu);
      lap("gpu_timeline");
    } catch (...) {
      gpu_error = std::current_exception();
    }
  };
  const bool parallel = opt.threads > 1 || (opt.threads == 0 && std::thread::hardware_concurrency() > 1 &&
                                             store.size() >= kParallelMinEvents);
  std::thread gpu_thread;
  if (parallel) {
    gpu_thread = std::thread(gpu_passes);
  } else {
    gpu_passes();
    if (gpu_error) std::rethrow_exception(gpu_error);
  }

  try {
    analyse_breakdown(idx, a.steps);
    done("breakdown");
    a.kernels = analyse_kernels(idx, a.steps, opt.top);
    done("kernels");
    a.kernels.launch = analyse_launch(idx);
    done("launch");
    a.copies = analyse_copies(idx, a.steps);
    done("copies");
    a.syncs = analyse_syncs(idx, a.steps);
    done("syncs");
    a.memory = analyse_memory(idx, a.steps);
    done("memory");
    a.precision = analyse_precision(idx);
    done("precision");
    a.parallel = analyse_parallel(idx, a.steps);
    done("parallel");
    a.bound = analyse_step_bound(idx, a.steps);
    done("step_bound");
    a.collectives = analyse_collectives(idx, a.steps);
    done("collectives");
  } catch (...) {
    if (gpu_thread.joinable()) gpu_thread.join();
    throw;
  }
  if (gpu_thread.joinable()) gpu_thread.join();
  if (gpu_error) std::rethrow_exception(gpu_error);
  a.pass_seconds.insert(a.pass_seconds.end(), gpu_laps.begin(), gpu_laps.end());

  if (const int64_t u = a.gpu.attribution.cause_ns(IdleCause::Untraced); u > a.gpu.idle_ns * kUntracedWarnShare)
    a.warnings.push_back(fmt::format(
        "{:.0f}% of the GPU's idle time ({:.1f} ms) sits between kernels queued on the same stream: the trace lacks "
        "the GPU work that ran there (a sampled or filtered trace), so its idle figures overstate the waiting",
        100.0 * u / a.gpu.idle_ns, u / 1e6));
  a.analyse_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

}  // namespace ts::analysis
