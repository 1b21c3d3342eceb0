#include "run/agent_summary.h"
#include "run/step_units.h"

#include "run/code_sites.h"

#include "util/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ts::run {

double slope(const std::vector<double>& y) {
  size_t n = y.size();
  if (n < 2) return 0;
  double mx = (n - 1) / 2.0, my = 0;
  for (double v : y) my += v;
  my /= n;
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (i - mx) * (y[i] - my);
    den += (i - mx) * (i - mx);
  }
  return den > 0 ? num / den : 0;
}

double robust_slope(const std::vector<double>& y) {
  size_t n = y.size();
  if (n < 2) return 0;
  // Subsample long runs so the pair count stays bounded (~ 200^2 / 2 pairs).
  size_t stride = std::max<size_t>(1, n / 200);
  std::vector<double> s;
  for (size_t i = 0; i < n; i += stride)
    for (size_t j = i + stride; j < n; j += stride) s.push_back((y[j] - y[i]) / static_cast<double>(j - i));
  return median(std::move(s));
}

double robust_slope(const std::vector<double>& y, const std::vector<int>& segment) {
  std::vector<double> x(y.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  return robust_slope(x, y, segment);
}

double robust_slope(const std::vector<double>& x, const std::vector<double>& y, const std::vector<int>& segment) {
  size_t n = y.size();
  size_t stride = std::max<size_t>(1, n / 200);
  std::vector<double> s;
  for (size_t i = 0; i < n; i += stride) {
    if (segment[i] < 0) continue;
    for (size_t j = i + stride; j < n; j += stride)
      if (segment[j] == segment[i] && x[j] != x[i]) s.push_back((y[j] - y[i]) / (x[j] - x[i]));
  }
  if (!s.empty()) return median(std::move(s));
  for (size_t i = 0; i < n; i += stride)  // no two points in one segment: all points, one segment
    for (size_t j = i + stride; j < n; j += stride)
      if (x[j] != x[i]) s.push_back((y[j] - y[i]) / (x[j] - x[i]));
  return median(std::move(s));
}

namespace {

pid_t pick_main_pid(const Records& r) {
  std::map<pid_t, int64_t> steps;
  for (const auto& s : r.steps) ++steps[s.pid];
  for (const auto& [key, t] : r.step_totals) steps[key.first] = std::max(steps[key.first], t.count);
  std::set<pid_t> rank0;
  for (const auto& t : r.texts)
    if ((t.kind == "hello" || t.kind == "runtime") && t.get("rank") == "0") rank0.insert(t.pid);
  pid_t best = 0;
  int64_t best_n = -1;
  for (auto [pid, n] : steps) {
    int64_t score = n + (rank0.count(pid) ? (int64_t{1} << 40) : 0);
    if (score > best_n) best = pid, best_n = score;
  }
  if (best) return best;
  // No steps: the process that imported torch, else the first that said hello.
  for (const auto& t : r.texts)
    if (t.kind == "torch") return t.pid;
  for (const auto& t : r.texts)
    if (t.kind == "hello") return t.pid;
  return 0;
}

}  // namespace

std::vector<StepRecord> steps_of(const Records& r, pid_t pid) {
  // The best marker this process reported; the earlier steps of weaker markers were counted
  // before it appeared (docs/AGENT.md, "What a step is").
  int best = 0;
  for (const auto& s : r.steps)
    if (s.pid == pid) best = std::max(best, static_cast<int>(step_source(s.flags)));
  std::vector<StepRecord> steps;
  for (const auto& s : r.steps)
    if (s.pid == pid && static_cast<int>(step_source(s.flags)) == best) steps.push_back(s);
  std::map<int64_t, int64_t> gpu_by_step;
  for (const auto& g : r.gpu)
    if (g.pid == pid) gpu_by_step[g.step] = g.gpu_ns;
  for (auto& s : steps) {
    auto it = gpu_by_step.find(s.step);
    if (it != gpu_by_step.end()) s.gpu_ns = it->second;
  }
  return steps;
}

std::vector<const StepRecord*> steady_steps(const std::vector<StepRecord>& steps, int64_t& warmup) {
  // Warm-up: the first step always (imports, allocator, finding the model), the first two
  // when there are 10 or more. Profiled steps are measured under the profiler: left out. So are
  // steps that waited for DataLoader workers to start (a new pass without persistent_workers):
  // that wait is worker-restarts' on the run's scale, not a steady step's data wait.
  size_t n = steps.size();
  warmup = n >= 10 ? 2 : (n >= 3 ? 1 : 0);
  std::vector<const StepRecord*> kept;
  for (size_t i = static_cast<size_t>(warmup); i < n; ++i)
    if (!(steps[i].flags & (kStepProfiled | kStepWorkers))) kept.push_back(&steps[i]);
  if (kept.empty())
    for (size_t i = static_cast<size_t>(warmup); i < n; ++i) kept.push_back(&steps[i]);
  if (kept.empty())
    for (const auto& s : steps) kept.push_back(&s);
  return kept;
}

namespace {
// The process's CPU per step from its CPU clock's readings (one at most every 10 ms, at a step's
// end): the clock's rise over the steps between two readings, summed over the pairs with no
// warm-up, profiled or worker-starting step between them. The sample holds every profiled step; a
// worker start it left out (a long run, workers started anew each epoch) may lie between two
// readings, and its fork's CPU, a few ms once a pass, is then spread over their steps. -1 with no
// such pair.
double process_cpu_per_step_ms(const std::vector<StepRecord>& steps, int64_t warmup) {
  double cpu_ns = 0;
  int64_t n = 0;
  const StepRecord* prev = nullptr;  // the last reading, with only steady steps after it
  for (size_t i = static_cast<size_t>(std::max<int64_t>(0, warmup)); i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    if (s.flags & (kStepProfiled | kStepWorkers)) {
      prev = nullptr;
      continue;
    }
    if (s.cpu_ns < 0) continue;
    if (prev && s.step > prev->step && s.cpu_ns >= prev->cpu_ns)
      cpu_ns += static_cast<double>(s.cpu_ns - prev->cpu_ns), n += s.step - prev->step;
    prev = &s;
  }
  return n > 0 ? cpu_ns / static_cast<double>(n) / 1e6 : -1;
}
}  // namespace

AgentSummary summarise(const Records& r) {
  AgentSummary out;
  auto& ev = out.evidence;
  out.agent_loaded = !r.texts.empty() || !r.steps.empty();
  out.main_pid = pick_main_pid(r);
  ev.dropped_records = static_cast<int64_t>(r.seq_gaps);

  // Settings (the main process's; loaders from any process, deduplicated by content).
  std::set<std::string> loader_keys;
  bool torch_found_anywhere = false, any_end = false, hooked = false, unhooked = false;
  struct LoadCpu { double wall = 0, cpu = 0, delay = 0; };  // ns: loading's wall, CPU, run-queue delay
  std::map<pid_t, LoadCpu> load_cpu;
  std::string exe, cwd;
  for (const auto& t : r.texts) {
    bool mine = t.pid == out.main_pid;
    if (t.kind == "hello" && mine) {
      ev.python_version = t.get("python");
      cwd = t.get("cwd");
      exe = t.get("executable");
      if (t.kv.count("rank")) ev.rank = static_cast<int>(t.get_int("rank", 0));
      if (t.kv.count("world_size")) ev.world_size = static_cast<int>(t.get_int("world_size", 1));
    } else if (t.kind == "torch") {
      out.torch_imported = hooked = true;
      if (mine || ev.torch_version.empty()) {
        ev.torch_version = t.get("torch_version");
        ev.cuda_version = t.get("cuda_version");
        ev.torch_threads = static_cast<int>(t.get_int("num_threads", 0));
      }
    } else if (t.kind == "runtime" && mine) {
      if (t.kv.count("tf32_matmul")) ev.tf32_matmul = t.get_bool("tf32_matmul") ? 1 : 0;
      if (t.kv.count("tf32_cudnn")) ev.tf32_cudnn = t.get_bool("tf32_cudnn") ? 1 : 0;
      ev.float32_matmul_precision = t.get("float32_matmul_precision");
      ev.cuda_available = t.get_bool("cuda_available");
      ev.torch_threads = static_cast<int>(t.get_int("num_threads", ev.torch_threads));
      ev.device_name = t.get("device_name");
      ev.device_capability = static_cast<int>(t.get_int("device_capability", 0));
      ev.device_mem_total_bytes = t.get_double("device_total_memory", -1);
      if (t.kv.count("rank") && !t.get("rank").empty()) ev.rank = static_cast<int>(t.get_int("rank", 0));
      if (t.kv.count("world_size") && !t.get("world_size").empty())
        ev.world_size = static_cast<int>(t.get_int("world_size", 1));
    } else if (t.kind == "model" && mine) {
      ev.param_device = t.get("param_device");
      ev.param_dtype = t.get("param_dtype");
      ev.autocast_dtype = t.get("autocast_dtype");
      ev.compiled = t.get_bool("compiled");
      ev.data_parallel = t.get_bool("data_parallel");
      ev.ddp = t.get_bool("ddp");
      ev.sharding = t.get("sharding");
    } else if (t.kind == "anomaly" && mine && t.get_bool("enabled")) {
      diagnose::AgentEvidence::Anomaly a;  // agent/trainscope_agent/anomaly.py
      a.check_nan = t.get_bool("check_nan");
      a.captures_per_step = t.get_int("captures_per_step", -1);
      a.capture_ns_per_step = t.get_double("capture_ns_per_step", -1);
      a.nodes_per_step = t.get_int("nodes_per_step", 0);
      a.grad_elems_per_step = t.get_int("grad_elems_per_step", 0);
      a.grad_tests_per_step = t.get_int("grad_tests_per_step", 0);
      a.nan_test_ns = std::max(0.0, t.get_double("nan_test_ns", 0));
      a.nan_elem_ns = std::max(0.0, t.get_double("nan_elem_ps", 0)) / 1e3;
      ev.anomaly = a;
    } else if (t.kind == "flops" && mine) {
      ev.model_flops_per_step = t.get_double("flops_per_step", -1);  // agent/trainscope_agent/flops.py
    } else if (t.kind == "optimizer" && mine && ev.optimizer.empty()) {
      ev.optimizer = t.get("class");
      ev.optimizer_impl = t.get("impl", "unknown");
      ev.optimizer_has_fused = t.get_bool("has_fused");
      ev.optimizer_has_foreach = t.get_bool("has_foreach");
      ev.optimizer_fused_on_device = t.kv.count("fused_on_device")
                                         ? t.get_bool("fused_on_device")
                                         : ev.optimizer_has_fused && t.get_bool("params_on_cuda");
      ev.optimizer_momentum = t.get_double("momentum", 0);
      ev.optimizer_weight_decay = t.get_double("weight_decay", 0);
    } else if (t.kind == "loader") {
      std::string key;
      for (const auto& [k, v] : t.kv) key += k + "=" + v + ";";
      if (!loader_keys.insert(key).second) continue;
      diagnose::AgentEvidence::Loader l;
      l.dataset = t.get("dataset");
      l.batch_size = t.get_int("batch_size", -1);
      l.num_workers = static_cast<int>(t.get_int("num_workers", -1));
      l.pin_memory = t.get_bool("pin_memory");
      l.prefetch_factor = static_cast<int>(t.get_int("prefetch_factor", -1));
      l.persistent_workers = t.get_bool("persistent_workers");
      l.iterable = t.get_bool("iterable");
      l.start_method = t.get("start_method");
      l.site_file = t.get("site_file");
      l.site_line = t.get_int("site_line", 0);
      ev.loaders.push_back(l);
    } else if (t.kind == "loader_shards") {
      ev.stream_split = true;
    } else if (t.kind == "batch" && mine) {
      ev.batch_bytes = t.get_int("bytes", -1);
    } else if (t.kind == "trace" && (mine || out.trace_path.empty())) {
      out.trace_path = t.get("path");
      out.trace_first = t.get_int("first", -1);
      out.trace_last = t.get_int("last", -1);
      ev.profiler_window = true;
    } else if (t.kind == "load_cpu") {
      // Running totals per process (agent/trainscope_agent/load_cost.py): the latest counts.
      auto& l = load_cpu[t.pid];
      l.wall = std::max(l.wall, t.get_double("wall_ns", 0));
      l.cpu = std::max(l.cpu, t.get_double("cpu_ns", 0));
      l.delay = std::max(l.delay, t.get_double("run_delay_ns", 0));
    } else if (t.kind == "error") {
      ev.agent_errors.push_back(t.get("message"));
    } else if (t.kind == "note") {
      ev.notes.push_back(t.get("text"));
    } else if (t.kind == "end") {
      any_end = true;
      if (t.get_bool("torch_found") || t.get_bool("torch_imported")) torch_found_anywhere = true;
      if (t.get_bool("torch_imported")) out.torch_imported = true;
      // An agent switched off by its own error says so in its error record, not here.
      if (t.get_bool("torch_imported") && t.kv.count("torch_hooked") && !t.get_bool("torch_hooked") &&
          !t.get_bool("agent_off"))
        unhooked = true;
      if (mine) out.stop_reason = t.get("reason");
      if (exe.empty()) exe = t.get("executable");
    }
  }
  out.executable = exe;
  {
    // The share of the time loading could run: the run-queue delay (a core busy with other work)
    // is neither computing nor waiting on storage, and more workers cannot use it.
    double wall = 0, cpu = 0, delay = 0;
    for (const auto& [pid, l] : load_cpu) wall += l.wall, cpu += l.cpu, delay += l.delay;
    if (wall - delay > 0) ev.loading_cpu_share = std::clamp(cpu / (wall - delay), 0.0, 1.0);
    if (wall > 0) ev.loading_run_delay_share = std::clamp(delay / wall, 0.0, 1.0);
  }
  if (!out.agent_loaded) {
    ev.notes.push_back(
        "the agent did not load: the command is not Python, or Python ignored PYTHONPATH (-E/-I); "
        "only hardware samples are available");
  } else if (unhooked && !hooked) {
    out.torch_unhooked = true;
    ev.notes.push_back("torch was imported where trainscope's agent did not see the import (a module loaded past "
                       "Python's import system, or an import hook that bypasses sys.meta_path): the steps went "
                       "uncounted, so this run has only hardware samples");
  } else if (!out.torch_imported) {
    if (any_end && !torch_found_anywhere)
      ev.notes.push_back("torch is not installed for " + (exe.empty() ? std::string("this Python") : exe) +
                         ": the program ran without per-step measurements");
    else
      ev.notes.push_back("the program never imported torch: no training steps to measure");
  }

  // Steps of the main process: optimizer steps when there are any, else DataLoader fetches.
  out.steps = steps_of(r, out.main_pid);
  ev.step_source = out.steps.empty() ? "" : step_source_name(step_source(out.steps.front().flags));
  // Counts and sums come from the totals of every step; medians and trends from the sample
  // (agent_records.h). Records built by hand (tests) have no totals: the sample is then all.
  const StepTotals& tot = totals_of(r, out.main_pid);
  bool totals = tot.count >= static_cast<int64_t>(out.steps.size()) && tot.count > 0;
  ev.steps = totals ? tot.count : static_cast<int64_t>(out.steps.size());
  std::vector<const StepRecord*> kept = steady_steps(out.steps, out.warmup_steps);

  std::vector<double> dur, data, h2d, fwd, bwd, opt_ms, io, items, item_ms, gpu, h2dn, h2dpg, h2dbl,
      h2db, loading, compute;
  double sum_dur = 0, sum_data = 0, sum_io = 0, sum_h2d = 0;
  for (const auto* s : kept) {
    dur.push_back(ms(s->dur_ns));
    data.push_back(ms(s->data_wait_ns));
    h2d.push_back(ms(s->h2d_ns));
    fwd.push_back(ms(s->fwd_ns));
    bwd.push_back(ms(s->bwd_ns));
    opt_ms.push_back(ms(s->opt_ns));
    io.push_back(ms(s->io_ns));
    items.push_back(static_cast<double>(s->item_count));
    item_ms.push_back(ms(s->item_ns));
    h2dn.push_back(static_cast<double>(s->h2d_count));
    h2dpg.push_back(static_cast<double>(s->h2d_pageable));
    h2dbl.push_back(static_cast<double>(s->h2d_blocking));
    h2db.push_back(static_cast<double>(s->h2d_bytes));
    loading.push_back(ms(s->getitem_ns + s->collate_ns));
    compute.push_back(ms(std::max<int64_t>(0, s->dur_ns - s->data_wait_ns - s->h2d_ns - s->io_ns)));
    if (s->gpu_ns >= 0) gpu.push_back(ms(s->gpu_ns));
    sum_dur += s->dur_ns;
    sum_data += s->data_wait_ns;
    sum_io += s->io_ns;
    sum_h2d += s->h2d_ns;
  }
  if (!kept.empty()) {
    ev.step_ms = median(dur);
    ev.data_wait_ms = median(data);
    ev.h2d_ms = median(h2d);
    ev.forward_ms = median(fwd);
    ev.backward_ms = median(bwd);
    ev.optimizer_ms = median(opt_ms);
    ev.io_ms = median(io);
    ev.item_ms = median(item_ms);
    ev.item_calls_per_step = static_cast<int64_t>(std::llround(median(items)));
    // The median of each step's own remainder: where waiting is most of the step, the difference
    // of two medians carries both medians' noise into a small result.
    ev.compute_ms = median(compute);
    ev.compute_low_ms = percentile(compute, 0.10);
    ev.process_cpu_ms = process_cpu_per_step_ms(out.steps, out.warmup_steps);
    ev.gpu_ms = gpu.empty() ? -1 : median(gpu);
    ev.h2d_copies = std::llround(median(h2dn));
    ev.h2d_pageable = std::llround(median(h2dpg));
    ev.h2d_blocking = std::llround(median(h2dbl));
    ev.h2d_bytes_per_step = std::llround(median(h2db));
    ev.main_process_loading_ms = median(loading);
    // Gradient accumulation: backward calls per optimizer.step() call, per step (a GAN's
    // discriminator backward twice and the generator once over 2 optimizer steps: 1.5, not 2).
    std::vector<double> bwd_per_opt, opts;
    for (const auto* s : kept)
      if (s->opt_count > 0 && s->bwd_count >= 0) {
        bwd_per_opt.push_back(static_cast<double>(s->bwd_count) / static_cast<double>(s->opt_count));
        opts.push_back(static_cast<double>(s->opt_count));
      }
    if (!bwd_per_opt.empty()) {
      ev.backward_per_optimizer_step = median(bwd_per_opt);
      ev.optimizer_steps_per_step = median(opts);
      if (ev.backward_per_optimizer_step >= 2) ev.grad_accum_steps = std::llround(ev.backward_per_optimizer_step);
    }
    // Shares as ratios of sums over every steady step: one slow step weighs what it cost. The
    // sample holds every step the medians leave out (warm-up in its head, the profiler window
    // always), so the totals less those are the steady steps' sums, sampled or not.
    if (totals) {
      double all_dur = 0, all_data = 0, all_io = 0, all_h2d = 0;
      for (const auto& s : out.steps)
        all_dur += s.dur_ns, all_data += s.data_wait_ns, all_io += s.io_ns, all_h2d += s.h2d_ns;
      sum_dur = tot.dur_ns - (all_dur - sum_dur);
      sum_data = tot.data_wait_ns - (all_data - sum_data);
      sum_io = tot.io_ns - (all_io - sum_io);
      sum_h2d = tot.h2d_ns - (all_h2d - sum_h2d);
    }
    if (sum_dur > 0) {
      // One statistic for the wait: its mean per step and its share of the mean step are the same
      // ratio of sums (a median wait beside a ratio of sums disagrees when a few steps wait long
      // and the rest draw on prefetched batches).
      const double n = totals ? double(tot.count - int64_t(out.steps.size() - kept.size())) : double(kept.size());
      if (n > 0) {
        ev.step_mean_ms = sum_dur / n / 1e6;
        ev.data_wait_ms = sum_data / n / 1e6;
        ev.io_ms = sum_io / n / 1e6;  // a checkpoint every N steps: the median step writes nothing
      }
      ev.data_wait_pct = 100.0 * sum_data / sum_dur;
      ev.io_pct = 100.0 * sum_io / sum_dur;
      ev.h2d_pct = 100.0 * sum_h2d / sum_dur;
    }
  }

  // Memory: the CUDA allocator's readings when the job used CUDA (the agent reads them at most
  // every 50 ms, kept apart from the step sample: Records::mem), else the C heap's in-use bytes
  // where the agent read them (agent heap.py: freed memory that stays resident hides a leak from
  // the RSS), else the process RSS: its readings, kept apart likewise (Records::host_mem). With the
  // heap, the RSS at the same steps goes along (mem_rss_per_step): Python's own small objects are
  // not in the heap; and the RSS less the heap's free bytes (mem_rss_used_per_step): freed memory
  // glibc keeps is not a leak.
  // Growth is a trend: the slope over the points after warm-up.
  struct Point { double step, value, rss, heap_free; bool profiled; };
  std::vector<Point> points;
  int kind = out.steps.empty() ? -1 : static_cast<int>(step_source(out.steps.front().flags));
  for (const auto& m : r.mem) {
    if (m.pid != out.main_pid || m.level != kind) continue;
    points.push_back({static_cast<double>(m.step), static_cast<double>(m.allocated), -1, -1, m.profiled});
    ev.mem_peak_bytes = std::max(ev.mem_peak_bytes, static_cast<double>(m.peak));
    ev.mem_reserved_bytes = std::max(ev.mem_reserved_bytes, static_cast<double>(m.reserved));
  }
  bool cuda_mem = !points.empty();
  auto ours = [&](const MemPoint& m) { return m.pid == out.main_pid && m.level == kind; };
  bool heap = !cuda_mem && std::any_of(r.host_mem.begin(), r.host_mem.end(),
                                       [&](const MemPoint& m) { return ours(m) && m.heap >= 0; });
  ev.mem_source = out.steps.empty() ? "" : (cuda_mem ? "cuda" : heap ? "heap" : "rss");
  for (const auto& m : r.host_mem) {
    if (cuda_mem || !ours(m) || (heap && m.heap < 0)) continue;
    points.push_back({static_cast<double>(m.step), static_cast<double>(heap ? m.heap : m.rss),
                      static_cast<double>(m.rss), static_cast<double>(m.heap_free), m.profiled});
    ev.mem_peak_bytes = std::max(ev.mem_peak_bytes, static_cast<double>(m.rss));
  }
  for (const auto& s : out.steps) {
    if (!cuda_mem) ev.mem_peak_bytes = std::max(ev.mem_peak_bytes, static_cast<double>(s.rss));
    if (s.flags & kStepNonFinite) ++ev.nonfinite_losses;
  }
  if (totals) {  // every step, not only the sampled ones
    ev.nonfinite_losses = tot.nonfinite;
    ev.mem_peak_bytes = std::max(ev.mem_peak_bytes, static_cast<double>(cuda_mem ? tot.mem_peak : tot.rss));
    if (cuda_mem) ev.mem_reserved_bytes = std::max(ev.mem_reserved_bytes, static_cast<double>(tot.mem_reserved));
  }
  // Segments: runs of points after warm-up outside the profiler window (which raises memory once).
  std::vector<int> segment(points.size(), -1);
  std::vector<double> at;
  const bool free_known = heap && std::all_of(points.begin(), points.end(), [](const Point& p) { return p.heap_free >= 0; });
  int seg = 0;
  bool in_run = false;
  for (size_t i = 0; i < points.size(); ++i) {
    ev.mem_allocated_per_step.push_back(points[i].value);
    if (heap) ev.mem_rss_per_step.push_back(points[i].rss);
    if (free_known) ev.mem_rss_used_per_step.push_back(points[i].rss - points[i].heap_free);
    at.push_back(points[i].step);
    if (points[i].step <= static_cast<double>(out.warmup_steps)) continue;
    if (points[i].profiled) {
      if (in_run) ++seg;
      in_run = false;
      continue;
    }
    segment[i] = seg;
    in_run = true;
  }
  if (points.size() > static_cast<size_t>(out.warmup_steps))
    ev.mem_slope_bytes_per_step = robust_slope(at, ev.mem_allocated_per_step, segment);
  ev.mem_at_step = at;
  ev.mem_segment = segment;

  // Per-sample loading cost: DataLoader workers' records plus the main process's own fetches. A
  // worker's first batch only where no worker made a second: it holds the dataset's once-per-worker
  // set-up (a store opened lazily on the first item cost 0.15 s, and made the mean per sample 0.33 ms
  // where a sample took 20 us: tests/corpus/hf_trainer_workers).
  FetchSums w = r.fetches.later;
  if (w.samples == 0) w += r.fetches.first;
  int64_t samples = w.samples, getitem = w.getitem_ns, collate = w.collate_ns, batches = w.records;
  bool main_totals = false;
  for (const auto& [key, t] : r.step_totals) {
    if (key.first != out.main_pid) continue;
    main_totals = true;
    samples += t.samples, getitem += t.getitem_ns, collate += t.collate_ns, batches += t.fetches;
  }
  for (const auto& s : r.steps) {
    if (main_totals || s.pid != out.main_pid || s.samples == 0) continue;
    samples += s.samples;
    getitem += s.getitem_ns;
    collate += s.collate_ns;
    batches += s.fetches;
  }
  if (samples > 0) ev.sample_getitem_ms = ms(getitem) / static_cast<double>(samples);
  if (batches > 0) ev.collate_ms = ms(collate) / static_cast<double>(batches);
  summarise_sites(r, out.main_pid, cwd, ev);
  out.cwd = cwd;
  return out;
}

}  // namespace ts::run
