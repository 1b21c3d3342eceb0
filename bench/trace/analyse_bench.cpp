// analyse() throughput on a real trace and on a large store made by repeating it.
// Baseline in the same run: reading the trace file (trace::read_trace). Prints events/s and the
// ratio analyse time / read time, so results compare across machines. Then the share of
// analyse() that the GPU idle attribution costs (issue 12's budget: <= 15%), in thread CPU time
// (robust on a shared machine) and wall time, on the x1 and the xK store.
//
// Usage: analyse_bench [TRACE] [--copies K] [--runs N]
//   TRACE defaults to tests/data/tb_resnet50_num_workers_0...; K (default 40) copies of its events
//   are laid end to end (timestamps and correlation ids shifted) to make a store of K x events.
#include <algorithm>
#include <chrono>
#include <exception>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ctime>

#include "analysis/passes.h"
#include "analysis/trace_analysis.h"
#include "trace/reader.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// Peak resident memory of this process so far (VmHWM), MB.
double peak_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb / 1024;
}
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// Best-of-N thread CPU seconds of analyse() and of the idle attribution alone (on the same
// index, steps and GPU time analyse() computes first).
void idle_share(const ts::trace::EventStore& s, int runs, const char* label) {
  double all = 1e30, idle = 1e30, all_wall = 1e30, idle_wall = 1e30;
  for (int r = 0; r < runs; ++r) {
    double c0 = thread_cpu_s();
    auto t0 = std::chrono::steady_clock::now();
    ts::analysis::AnalyseOptions serial;
    serial.threads = 1;  // thread CPU time then covers every pass
    ts::analysis::TraceAnalysis a = ts::analysis::analyse(s, serial);
    all = std::min(all, thread_cpu_s() - c0);
    all_wall = std::min(all_wall, seconds_since(t0));
    ts::analysis::TraceIndex idx(s);
    ts::analysis::StepSummary steps = ts::analysis::analyse_steps(idx, {});
    ts::analysis::GpuTime gpu = ts::analysis::analyse_gpu_time(idx, steps);
    c0 = thread_cpu_s();
    t0 = std::chrono::steady_clock::now();
    ts::analysis::analyse_idle_attribution(idx, steps, gpu);
    idle = std::min(idle, thread_cpu_s() - c0);
    idle_wall = std::min(idle_wall, seconds_since(t0));
    if (gpu.attribution.idle_ns != a.gpu.idle_ns) std::fprintf(stderr, "warning: attribution does not total\n");
  }
  std::printf("idle attribution %-4s %8.3f s cpu of analyse %8.3f s cpu = %5.1f%%  (wall %.3f of %.3f s = %.1f%%)\n",
              label, idle, all, 100 * idle / all, idle_wall, all_wall, 100 * idle_wall / all_wall);
}

// Best-of-runs thread CPU time of f().
template <class F>
double best_cpu(int runs, F&& f) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const double t0 = thread_cpu_s();
    f();
    best = std::min(best, thread_cpu_s() - t0);
  }
  return best;
}

// The cost of the step-bound, collectives and timeline passes against the whole analyse(), both
// in thread CPU time on the same store (docs/BENCHMARKS.md: "New passes' share").
void time_new_passes(const ts::trace::EventStore& s, int runs) {
  using namespace ts::analysis;
  AnalyseOptions serial;
  serial.threads = 1;  // thread CPU time then covers every pass
  const double whole = best_cpu(runs, [&] { (void)analyse(s, serial); });
  TraceIndex idx(s);
  StepSummary steps = analyse_steps(idx, {});
  GpuTime gpu = analyse_gpu_time(idx, steps);
  analyse_idle_attribution(idx, steps, gpu);  // the timeline reads its pieces
  const double bound = best_cpu(runs, [&] { (void)analyse_step_bound(idx, steps); });
  const double coll = best_cpu(runs, [&] { (void)analyse_collectives(idx, steps); });
  const double tl = best_cpu(runs, [&] { (void)analyse_gpu_timeline(idx, steps, gpu); });
  std::printf("new passes (thread CPU, best of %d): analyse %.3f s; step_bound %.4f s (%.1f%%), "
              "collectives %.4f s (%.1f%%), gpu_timeline %.4f s (%.1f%%)\n",
              runs, whole, bound, 100 * bound / whole, coll, 100 * coll / whole, tl, 100 * tl / whole);
}

// Appends copies 1..k-1 of the store's own events, each shifted past the previous copy.
void repeat_store(ts::trace::EventStore& s, int k) {
  const size_t n = s.size();
  int64_t lo = INT64_MAX, hi = INT64_MIN, max_corr = 0, max_ext = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, s.ts_ns[i]);
    hi = std::max(hi, s.ts_ns[i] + s.dur_ns[i]);
    max_corr = std::max(max_corr, s.correlation[i]);
    max_ext = std::max(max_ext, s.external_id[i]);
  }
  const int64_t span = hi - lo + 1000;
  s.reserve(n * k);
  for (int c = 1; c < k; ++c)
    for (size_t i = 0; i < n; ++i) {
      const int64_t corr = s.correlation[i] == ts::trace::kNone ? ts::trace::kNone
                                                                  : s.correlation[i] + c * (max_corr + 1);
      const int64_t ext = s.external_id[i] == ts::trace::kNone ? ts::trace::kNone
                                                                 : s.external_id[i] + c * (max_ext + 1);
      s.add(s.name[i], s.cat[i], s.ph[i], s.pid(i), s.tid(i), s.ts_ns[i] + c * span, s.dur_ns[i],
            corr, ext, s.args[i], s.input_dims[i], s.input_types[i]);
    }
}

}  // namespace

int run(int argc, char** argv) {
  std::string path = std::string(TS_SOURCE_DIR) +
                     "/tests/data/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
  int copies = 40, runs = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: analyse_bench [TRACE] [--copies K] [--runs N]\n"
                  "  analyse() on TRACE (default: the ResNet-50 fixture) and on K copies of its events\n"
                  "  in one store (default 40), best of N runs (default 3), against read_trace.\n");
      return 0;
    }
    if (a == "--copies" && i + 1 < argc) copies = std::max(1, std::atoi(argv[++i]));
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "analyse_bench: unknown option %s (see --help)\n", a.c_str());
      return 2;
    } else path = a;
  }
  double read_s = 1e30;
  ts::trace::EventStore store;
  double read_peak = 0;
  for (int r = 0; r < runs; ++r) {
    if (r > 0) store = ts::trace::EventStore();  // one store at a time, as analyze holds
    auto t0 = std::chrono::steady_clock::now();
    store = ts::trace::read_trace(path);
    read_s = std::min(read_s, seconds_since(t0));
    if (r == 0) read_peak = peak_rss_mb();
  }
  std::vector<std::pair<std::string, double>> passes;  // of the best run
  auto best_analyse = [&](const ts::trace::EventStore& s) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ts::analysis::TraceAnalysis a = ts::analysis::analyse(s);
      const double t = seconds_since(t0);
      if (t < best) best = t, passes = a.pass_seconds;
      if (a.steps.steps.empty()) std::fprintf(stderr, "warning: no steps\n");
    }
    return best;
  };
  auto print_passes = [&](double whole) {
    std::printf("  passes (wall, best run):");
    for (const auto& [name, sec] : passes) std::printf(" %s %.3f (%.0f%%)", name.c_str(), sec, 100 * sec / whole);
    std::printf("\n");
  };
  const double one_s = best_analyse(store);
  const double analyse_peak = peak_rss_mb();
  const size_t n1 = store.size();
  std::printf("trace: %s\n", path.c_str());
  std::printf("read_trace:        %9zu events  %8.3f s  %6.2f M events/s\n", n1, read_s, n1 / read_s / 1e6);
  std::printf("analyse:           %9zu events  %8.3f s  %6.2f M events/s  (%.2fx the read time)\n", n1,
              one_s, n1 / one_s / 1e6, one_s / read_s);
  print_passes(one_s);
  std::printf("  peak RSS: %.0f MB after reading, %.0f MB after analysing (input %.0f MB)\n", read_peak, analyse_peak,
              store.meta.input_bytes / 1e6);
  if (copies <= 1) return 0;  // nothing more to measure
  idle_share(store, runs, "x1");
  repeat_store(store, copies);
  const size_t nk = store.size();
  const double big_s = best_analyse(store);
  std::printf("analyse x%-3d:      %9zu events  %8.3f s  %6.2f M events/s  (%.2fx the time per event of x1)\n",
              copies, nk, big_s, nk / big_s / 1e6, (big_s / nk) / (one_s / n1));
  print_passes(big_s);
  idle_share(store, runs, ("x" + std::to_string(copies)).c_str());
  time_new_passes(store, runs);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a bad trace: one line, not an abort
    std::fprintf(stderr, "analyse_bench: %s\n", e.what());
    return 1;
  }
}
