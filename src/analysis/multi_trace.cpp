// Several traces, one per rank (docs/ANALYSES.md).
// Each trace is read and analysed in a worker thread (at most `threads` at once, so at most that
// many stores are in memory); results keep the order of the paths.
// Per-rank table: rank (distributedInfo.rank, else "rank<N>" in the file name, else the position), steps, median step
// time, communication time per step (|communication kernels| inside the steps / steps), GPU idle %.
// The traces must be the ranks of one job (judge_one_job below): two runs of a script are not.
// Straggler: the rank with the largest median step time (needs >= 2 ranks). The others then
// spend extra time inside collectives waiting for it: wait_ns_per_step = their communication time
// per step - the straggler's (clipped at 0), since the straggler arrives last and waits least.
// Last arrival at the collectives (clock-free, so ranks on different hosts compare): a call is
// matched when every rank has a communication kernel with the same ProfilerStep number, the same
// position among that step's calls and the same collective name. A collective ends on all ranks
// together, so the rank that arrives last has the shortest kernel and every other rank r waited
// dur_r - min dur inside it. last_rank: the rank that is last in the most matched calls (exact
// ties in duration name nobody); others_wait_ns_per_step: in the calls where it is last, the
// other ranks' waits summed, divided by (ranks - 1) and by the steps; per rank,
// collective_wait_ns_per_step is its own wait over all matched calls / its steps.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>
#include <thread>

#include "analysis/passes.h"
#include "trace/reader.h"
#include "trace/written_whole.h"
#include "util/error.h"
#include "util/memory.h"

namespace ts::analysis {

namespace fs = std::filesystem;


std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths, bool* job_dir) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz")))
          found.push_back(e.path().string());
      }
      // A job directory (`trainscope run --job-dir`): one folder per node, each with its ranks' traces.
      if (found.empty()) {
        for (const auto& sub : fs::directory_iterator(p, ec)) {
          std::error_code ec2;
          if (!sub.is_directory(ec2) || sub.path().filename().string()[0] == '.') continue;
          for (const auto& e : fs::directory_iterator(sub.path(), ec2)) {
            const std::string name = e.path().filename().string();
            if (!e.is_regular_file() || !name.starts_with("trace") || !(name.ends_with(".json") || name.ends_with(".json.gz")))
              continue;
            found.push_back(e.path().string());
            if (job_dir) *job_dir = true;
          }
        }
      }
      if (found.empty()) throw UserError(p + ": directory holds no .json or .json.gz trace");
      // A `trainscope run` directory holds its report.json beside the traces (trace.json,
      // trace_rank<R>.pt.trace.json): that one file is not a trace.
      if (found.size() > 1)
        std::erase_if(found, [](const std::string& f) { return fs::path(f).filename() == "report.json"; });
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

int rank_from_file_name(const std::string& path) {
  static const std::regex kRank(R"(rank[-_]?(\d{1,6})(?!\d))", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  return std::regex_search(name, m, kRank) ? std::stoi(m[1]) : -1;
}

namespace {

// An absolute time on the Unix epoch clock (after 2001-09-09), not a monotonic one: only then
// can spans of different traces be compared.
constexpr int64_t kEpochNs = 1'000'000'000'000'000'000;

// Ranks of one job: distinct ranks (distributedInfo, else file names) that agree on the world
// size; without ranks, wall-clock spans that overlap (the ranks record the same steps at the same
// time). Anything else (two runs of a script, rank-0 traces of different jobs) is not one job.
void judge_one_job(MultiTraceAnalysis& m, const std::vector<int>& named) {
  const size_t n = m.traces.size();
  if (n < 2) return;
  bool all_ranked = true, from_info = true;
  std::set<int> ranks, worlds;
  for (size_t i = 0; i < n; ++i) {
    int r = m.traces[i].parallel.rank >= 0 ? m.traces[i].parallel.rank : named[i];
    from_info = from_info && m.traces[i].parallel.rank >= 0;
    if (r < 0) all_ranked = false;
    if (!ranks.insert(r).second && r >= 0) {
      m.job_basis = fmt::format("two traces are rank {}: separate runs, compared side by side only", r);
      return;
    }
    if (m.traces[i].parallel.world_size > 0) worlds.insert(m.traces[i].parallel.world_size);
  }
  if (all_ranked) {
    if (worlds.size() > 1) {
      m.job_basis = "the traces disagree on the world size: separate jobs, compared side by side only";
      return;
    }
    m.one_job = true;
    m.job_basis = from_info ? "ranks from distributedInfo" : "ranks from the file names";
    return;
  }
  int64_t latest_start = INT64_MIN, earliest_end = INT64_MAX;
  for (const auto& t : m.traces) {
    if (t.steps.steps.empty()) {
      m.job_basis = "a trace has no steps and no rank: compared side by side only";
      return;
    }
    int64_t start = t.base_time_ns + t.steps.steps.front().start_ns, end = t.base_time_ns + t.steps.steps.back().end_ns;
    if (start < kEpochNs) {
      m.job_basis = "no rank information and no wall clock to tell whether the traces ran together: compared side by side only";
      return;
    }
    latest_start = std::max(latest_start, start);
    earliest_end = std::min(earliest_end, end);
  }
  m.one_job = latest_start < earliest_end;
  m.job_basis = m.one_job ? "steps recorded at the same time (overlapping wall-clock spans)"
                          : "recorded at different times (no overlap): separate runs, compared side by side only";
}

// Last arrivals at the matched collectives (definition above). m.ranks is sorted by rank.
void match_collectives(MultiTraceAnalysis& m) {
  const size_t n = m.ranks.size();
  std::vector<const TraceAnalysis*> trace_of(n);
  for (size_t i = 0; i < n; ++i) trace_of[i] = &m.traces[static_cast<size_t>(m.ranks[i].trace)];
  using Key = std::pair<int64_t, int32_t>;  // (step, ordinal)
  std::vector<std::map<Key, const CollectiveCall*>> calls(n);
  for (size_t i = 0; i < n; ++i) {
    for (const CollectiveCall& c : trace_of[i]->collectives.calls) calls[i].emplace(Key{c.step, c.ordinal}, &c);
  }
  if (calls[0].empty()) {
    m.arrival.note = "no communication kernels in the traces";
    return;
  }
  std::vector<int64_t> last(n, 0), wait(n, 0), wait_for_last(n, 0);
  for (const auto& [key, first] : calls[0]) {
    std::vector<int64_t> dur(n);
    const std::string& name = trace_of[0]->collectives.rows[first->row].name;
    bool everywhere = true;
    for (size_t i = 0; i < n && everywhere; ++i) {
      auto it = calls[i].find(key);
      everywhere = it != calls[i].end() && trace_of[i]->collectives.rows[it->second->row].name == name;
      if (everywhere) dur[i] = it->second->dur_ns;
    }
    if (!everywhere) continue;
    ++m.arrival.matched_calls;
    const int64_t lo = *std::min_element(dur.begin(), dur.end());
    size_t at_lo = 0, who = 0;
    for (size_t i = 0; i < n; ++i) {
      wait[i] += dur[i] - lo;
      if (dur[i] == lo) ++at_lo, who = i;
    }
    if (at_lo != 1) continue;  // a tie: nobody is last
    ++last[who];
    wait_for_last[who] += std::accumulate(dur.begin(), dur.end(), int64_t{0}) - lo * static_cast<int64_t>(n);
  }
  if (m.arrival.matched_calls == 0) {
    m.arrival.note = "no collective found on every rank at the same step and position";
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    m.ranks[i].last_arrivals = last[i];
    if (m.ranks[i].steps > 0) m.ranks[i].collective_wait_ns_per_step = static_cast<double>(wait[i]) / m.ranks[i].steps;
  }
  const size_t top = static_cast<size_t>(std::max_element(last.begin(), last.end()) - last.begin());
  if (last[top] == 0) {
    m.arrival.note = "every matched collective was a tie: no rank arrives last";
    return;
  }
  m.arrival.last_rank = m.ranks[top].rank;
  m.arrival.last_count = last[top];
  const int64_t steps = std::max<int64_t>(1, m.ranks[top].steps);
  m.arrival.others_wait_ns_per_step = static_cast<double>(wait_for_last[top]) / static_cast<double>(n - 1) / steps;
}

}  // namespace

MultiTraceAnalysis compare_ranks(std::vector<TraceAnalysis> traces) {
  MultiTraceAnalysis m;
  m.traces = std::move(traces);
  std::vector<int> named;
  for (const auto& t : m.traces) named.push_back(rank_from_file_name(t.path));
  judge_one_job(m, named);
  for (size_t i = 0; i < m.traces.size(); ++i) {
    const TraceAnalysis& t = m.traces[i];
    RankRow row;
    row.path = t.path;
    row.trace = static_cast<int>(i);
    row.rank = t.parallel.rank >= 0 ? t.parallel.rank : named[i] >= 0 ? named[i] : static_cast<int>(i);
    row.steps = static_cast<int64_t>(t.steps.steps.size());
    row.median_step_ns = t.steps.median_step_ns;
    if (row.steps > 0)
      row.comm_ns_per_step = t.parallel.comm_pct_of_step / 100.0 * t.steps.total_ns / row.steps;
    row.idle_pct = t.gpu.idle_pct;
    m.ranks.push_back(row);
  }
  std::stable_sort(m.ranks.begin(), m.ranks.end(),
                   [](const RankRow& a, const RankRow& b) { return a.rank < b.rank; });
  if (m.one_job && m.ranks.size() >= 2) {
    auto slow = std::max_element(m.ranks.begin(), m.ranks.end(), [](const RankRow& a, const RankRow& b) {
      return a.median_step_ns < b.median_step_ns;
    });
    auto fast = std::min_element(m.ranks.begin(), m.ranks.end(), [](const RankRow& a, const RankRow& b) {
      return a.median_step_ns < b.median_step_ns;
    });
    slow->straggler = true;
    m.straggler_rank = slow->rank;
    m.straggler_gap_ns = slow->median_step_ns - fast->median_step_ns;
    for (RankRow& r : m.ranks)
      r.wait_ns_per_step = r.straggler ? 0 : std::max(0.0, r.comm_ns_per_step - slow->comm_ns_per_step);
    match_collectives(m);
  }
  return m;
}

MultiTraceAnalysis analyse_traces(const std::vector<std::string>& given, const AnalyseOptions& opt, int threads,
                                  const std::function<void(size_t, size_t)>& progress, std::vector<std::string>* left_out) {
  const std::vector<std::string> paths = expand_trace_paths(given);
  std::vector<TraceAnalysis> results(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::vector<std::string> cut(paths.size());  // left out: why (a CutOffError's message)
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 0) threads = cores;
  threads = std::min<int>(threads, static_cast<int>(paths.size()));
  // Each read uses the cores the other traces leave (the parallel reader), and traces start only
  // while their estimated memory fits in 3/4 of what is available: a directory of large ranks
  // then holds as many stores as memory allows, not one per core (one always runs).
  trace::ReadOptions ro;
  ro.threads = std::max(1, cores / threads);
  const uint64_t budget = available_memory_bytes() / 4 * 3;
  uint64_t in_use = 0;
  std::mutex memory_mu;
  std::condition_variable memory_cv;
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) {
      const uint64_t need = trace::estimate_read_memory(paths[i]);
      {
        std::unique_lock<std::mutex> lk(memory_mu);
        memory_cv.wait(lk, [&] { return in_use == 0 || budget == 0 || in_use + need <= budget; });
        in_use += need;
      }
      try {
        const auto t0 = std::chrono::steady_clock::now();
        trace::EventStore store = trace::read_trace(paths[i], ro);
        const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        AnalyseOptions one = opt;
        if (one.threads == 0 && ro.threads == 1) one.threads = 1;  // no core left beside the other traces
        results[i] = analyse(store, one);
        results[i].path = paths[i];
        results[i].read_seconds = read_s;
      } catch (const trace::CutOffError& e) {
        // The reader found the end of the data inside the trace: told by the parse itself, at
        // no cost to the traces that are whole (a pre-scan of each file cost 1.57x, BENCHMARKS).
        if (left_out) cut[i] = std::string(e.what());
        else errors[i] = std::current_exception();
      } catch (...) {
        errors[i] = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(memory_mu);
        in_use -= need;
        memory_cv.notify_all();
      }
      const size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(d, paths.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first bad file, in path order
  std::vector<TraceAnalysis> kept;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (cut[i].empty()) kept.push_back(std::move(results[i]));
    else
      left_out->push_back(paths[i] + ": cut off, left out (" +
                          (cut[i].starts_with(paths[i] + ": ") ? cut[i].substr(paths[i].size() + 2) : cut[i]) + ")");
  }
  if (kept.empty()) throw UserError(cut.front());  // every trace cut off: nothing to analyse
  return compare_ranks(std::move(kept));
}

}  // namespace ts::analysis
