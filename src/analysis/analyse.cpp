// analyse(): runs every analysis on one trace. Steps first (they set the window the others
// count in), then each analysis in its own file; they share one TraceIndex.
//
// On a large trace the passes after the steps run on two threads, each taking the next pass
// from one list as it finishes its last: GPU time and idle attribution (the longest) first,
// then the rest in order, and the GPU timeline as soon as both of those are done (it reads
// them). A fixed split of the passes into two groups left one thread idle for 10-30 ms at the
// end when the other group ran long. That is safe because the passes only read the
// index and the store and write disjoint fields: of the steps, gpu_busy_ns (GPU time),
// breakdown (breakdown), kernels, syncs, mem_allocated_end and bound_* (their passes); idle
// attribution fills a GpuTime of its own, moved into the result when both are done.
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
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

// Passes that two threads (or one) take in order, each as it finishes its last. `after_both`
// runs on the thread that completes the second of passes `dep_a` and `dep_b`.
class PassQueue {
 public:
  struct Pass {
    const char* name;
    std::function<void()> run;
  };
  PassQueue(std::vector<Pass> passes, size_t dep_a, size_t dep_b, Pass after_both)
      : passes_(std::move(passes)), dep_a_(dep_a), dep_b_(dep_b), after_(std::move(after_both)) {}

  // Runs every pass on `threads` threads (this one included); rethrows the first error.
  void run(int threads) {
    std::thread second;
    if (threads > 1) second = std::thread([this] { work(); });
    work();
    if (second.joinable()) second.join();
    if (error_) std::rethrow_exception(error_);
  }
  std::vector<std::pair<std::string, double>> seconds;  // per pass, in order of completion

 private:
  void timed(const Pass& p) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      p.run();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_ = passes_.size();  // the others stop taking passes
    }
    std::lock_guard<std::mutex> lock(mu_);
    seconds.emplace_back(p.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  void work() {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (next_ >= passes_.size()) return;
        i = next_++;
      }
      timed(passes_[i]);
      if ((i == dep_a_ || i == dep_b_) && deps_done_.fetch_add(1) == 1) {
        bool failed;
        {
          std::lock_guard<std::mutex> lock(mu_);
          failed = error_ != nullptr;
        }
        if (!failed) timed(after_);
      }
    }
  }

  std::vector<Pass> passes_;
  const size_t dep_a_, dep_b_;
  Pass after_;
  std::mutex mu_;
  size_t next_ = 0;
  std::atomic<int> deps_done_{0};
  std::exception_ptr error_;
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

  GpuTime attribution;  // idle attribution's own, moved into a.gpu once GPU time is there too
  PassQueue passes(
      {
          {"gpu_time", [&] { a.gpu = analyse_gpu_time(idx, a.steps); }},
          {"idle_attribution", [&] { analyse_idle_attribution(idx, a.steps, attribution); }},
          {"breakdown", [&] { analyse_breakdown(idx, a.steps); }},
          {"kernels", [&] {
             a.kernels = analyse_kernels(idx, a.steps, opt.top);
             a.kernels.launch = analyse_launch(idx);
           }},
          {"copies", [&] { a.copies = analyse_copies(idx, a.steps); }},
          {"syncs", [&] { a.syncs = analyse_syncs(idx, a.steps); }},
          {"memory", [&] { a.memory = analyse_memory(idx, a.steps); }},
          {"precision", [&] { a.precision = analyse_precision(idx); }},
          {"parallel", [&] { a.parallel = analyse_parallel(idx, a.steps); }},
          {"step_bound", [&] { a.bound = analyse_step_bound(idx, a.steps); }},
          {"collectives", [&] { a.collectives = analyse_collectives(idx, a.steps); }},
      },
      0, 1,
      {"gpu_timeline", [&] {
         a.gpu.attribution = std::move(attribution.attribution);
         a.timeline = analyse_gpu_timeline(idx, a.steps, a.gpu);
       }});
  const bool parallel = opt.threads > 1 || (opt.threads == 0 && std::thread::hardware_concurrency() > 1 &&
                                             store.size() >= kParallelMinEvents);
  passes.run(parallel ? 2 : 1);
  a.pass_seconds.insert(a.pass_seconds.end(), passes.seconds.begin(), passes.seconds.end());

  if (const int64_t u = a.gpu.attribution.cause_ns(IdleCause::Untraced); u > a.gpu.idle_ns * kUntracedWarnShare)
    a.warnings.push_back(fmt::format(
        "{:.0f}% of the GPU's idle time ({:.1f} ms) sits between kernels queued on the same stream: the trace lacks "
        "the GPU work that ran there (a sampled or filtered trace), so its idle figures overstate the waiting",
        100.0 * u / a.gpu.idle_ns, u / 1e6));
  a.analyse_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

}  // namespace ts::analysis
