#pragma once
// Evidence: everything the rules may look at, one struct, every part optional.
// Each source fills its own part (trace analysis, hardware samples, the agent's step records
// and settings, experiment results); a rule asks for the parts it needs and stays silent
// when they are missing. Plain data only, so the sources need not know the rules.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"

namespace ts::diagnose {

// Summary of the hardware samples taken during a run or a watch (filled by the run layer).
struct SamplesEvidence {
  double duration_s = 0;
  int gpus = 0;
  bool nvml = false;  // false: no NVIDIA driver, GPU fields unknown
  double gpu_util_mean_pct = -1, gpu_util_p10_pct = -1, gpu_util_p90_pct = -1;
  double sm_active_mean_pct = -1, tensor_active_mean_pct = -1;  // GPM, -1 if absent
  std::string gpu_pattern;  // idle | sawtooth | steady-high | steady-low | irregular | unknown (sample/pattern.h)
  double sawtooth_period_ms = 0, sawtooth_duty_pct = 0;
  double gpu_mem_used_max_bytes = -1, gpu_mem_total_bytes = -1;
  double temp_max_c = -1, power_mean_w = -1;
  uint64_t throttle_reasons_seen = 0;  // OR of NVML clock-event reason bits (idle bit excluded)
  double throttled_pct = 0;           // share of samples with a thermal/power reason
  int cpu_cores = 0;        // usable cores (affinity and cgroup)
  double cpu_budget_cores = 0;
  double host_cpu_mean_pct = -1;       // all cores, 0-100
  double process_tree_cpu_mean_pct = -1;  // the job's processes, 100 = one core
  double process_tree_cpu_max_pct = -1;
  double process_tree_cpu_demand_max_pct = -1;  // peak CPU used + run-queue wait (sample/sampler.h)
  // The kernel's part of the job's CPU (stime) and the job's minor page faults per second, over
  // the steady steps outside the profiler window only (run/samples_evidence.h); -1 unmeasured.
  double process_tree_sys_mean_pct = -1;
  double process_tree_minflt_mean_per_s = -1;
  // The span (s) of steady steps the host and job CPU figures above cover (run/samples_evidence.h,
  // steady_cpu); -1: the whole run.
  double cpu_window_s = -1;
  int process_count = 0;
  double nonvoluntary_switches_per_s = 0;
  int threads_total = 0;
  double shm_total_bytes = -1, shm_used_max_bytes = -1;
  // Fresh shared memory's page faults and zeroing per MiB on this host, beyond the copy
  // (sample/shm_fault_cost.h), measured after a run that loaded through a DataLoader; -1 unknown.
  double shm_fault_ms_per_mib = -1;
  // Host libraries and CPU (for openblas-on-intel): vendor_id from /proc/cpuinfo ("GenuineIntel",
  // "AuthenticAMD"), BLAS and OpenMP runtimes by the library path mapped in the job's training
  // processes (/proc/PID/maps; the path, since Debian's OpenBLAS hides behind libblas.so.3).
  std::string cpu_vendor;
  std::vector<std::string> blas_libs, openmp_libs;
  // Thread oversubscription measured live across the job's training processes (all ranks) for
  // about a second after warm-up (run layer, sample/oversubscription.h); threads_measured false
  // when it was not (the job ended first, no /proc access).
  bool threads_measured = false;
  double threads_window_s = 0;
  int threads_samples = 0;
  double runnable_threads_mean = -1;    // mean threads in state R (running or queued), summed
  int thread_budget_cores = 0;          // the cores they may use (affinity, cgroup quota)
  bool threads_oversubscribed = false;  // runnable > 1.25 x budget and > budget + 0.5
  std::string threads_summary;          // one line for reports
  struct ThreadLoad {
    int pid = -1, rank = -1, threads = 0;  // rank -1: not a torchrun rank
    // The training process this one is a child of (its DataLoader workers, any helper it
    // started): their threads want the same cores. -1: a training process itself.
    int worker_of = -1;
    double runnable = 0, cpu_cores = 0, nonvoluntary_per_s = 0;
    double parallel_share = 0;             // samples with >= 2 of its threads in state R at once
    std::string omp_num_threads;           // "" unset
  };
  std::vector<ThreadLoad> thread_loads;
  // The cores other work kept busy: the host's busy cores less the job's, both means over the same
  // samples, so their difference is the mean of the others' use; 0 when either is unknown.
  double other_work_cores() const {
    if (host_cpu_mean_pct < 0 || process_tree_cpu_mean_pct < 0 || cpu_cores <= 0) return 0;
    const double others = host_cpu_mean_pct / 100 * cpu_cores - process_tree_cpu_mean_pct / 100;
    return std::clamp(others, 0.0, static_cast<double>(cpu_cores));
  }
  // The job's training processes the live look measured (those no other one started), at least 1.
  int training_processes() const {
    if (!threads_measured) return 1;
    return std::max<int>(1, static_cast<int>(std::count_if(thread_loads.begin(), thread_loads.end(),
                                                            [](const ThreadLoad& t) { return t.worker_of < 0; })));
  }
  // Time series for the HTML report's utilisation chart (empty when not recorded). All on one
  // clock, seconds from the start of sampling; step_start_s on the same clock.
  struct Series {
    std::vector<double> t_s, gpu_util_pct, cpu_util_pct, gpu_mem_used_bytes;
  } series;
  std::vector<double> step_start_s;
};

// A line of the user's code behind something the agent measured (agent/trainscope_agent/sites.py):
// the first frame outside PyTorch, installed packages, the standard library and trainscope.
struct CodeSite {
  // dataloader | optimizer | forward | config | ddp (construction sites); item | cpu | tolist |
  // synchronize (host syncs), h2d (host-to-device copies), io (torch.save, file writes): per call;
  // leak (a variable that keeps tensors across steps, with the line that stores into it); eval
  // (an evaluation call's line: calls, and host_ms the evaluation's time from it to the next
  // call); startup (a line the start-up profile sampled: host_ms is the time
  // before the first step it took, time-weighted).
  std::string role;
  std::string file;      // absolute path
  std::string path;      // as shown: relative to the run's working directory when inside it
  int64_t line = 0;
  std::string function;  // the enclosing function ("<module>" at top level)
  std::string code;      // the source line's text, stripped
  std::string detail;    // config: "transformers.TrainingArguments"; leak: what it holds
  std::string sha1;      // the file's hash when recorded (a patch is refused on a changed file)
  // Construction sites inside a function: the user's line that called it, as file/path/line/function/
  // code/sha1 above (caller_line 0: none, or a framework's frame called it). A helper that passes
  // its own parameters or **kwargs on is configured at that line (agent sites.py, "caller").
  std::string caller_file, caller_path, caller_function, caller_code, caller_sha1;
  int64_t caller_line = 0;
  // eval_call / eval_hook: the `if` that runs the line every K steps (agent guards.py), its test
  // as written and with K doubled (`global_step % (2 * eval_freq) == 0`); guard_line 0: none.
  int64_t guard_line = 0;
  std::string guard, guard_doubled;
  std::string loop_var;  // ... and the name its innermost `for` counts with ("epoch"), "" unknown
  int64_t calls = 0;     // per-call sites: calls over the run (a DataLoader: its fetches)
  double host_ms = 0;    // host time in those calls (a DataLoader: the loop's wait for it)
  double loop_ms = -1;   // eval: of host_ms, the time in evaluations a training step followed (0: the
                         // line ran only after the last step, a final test; -1: not recorded)
  double calls_per_step = -1, ms_per_step = -1;  // over the steps the agent had counted
  int64_t bytes = 0, pageable = 0, blocking = 0;  // h2d: bytes copied, calls from pageable memory, calls that blocked
  // dataloader: its iterators over worker processes (the workers starting) and the loop's wait in
  // their first fetches, one per worker; of those, restarts (a loader whose workers had started before: a new pass
  // without persistent_workers) and rebuilds (a new loader at this line over a dataset whose
  // workers had started here before: a loader built every epoch).
  int64_t starts = 0, restarts = 0, rebuilds = 0;
  double start_ms = 0, restart_ms = 0, rebuild_ms = 0;
  std::vector<std::pair<std::string, std::string>> knobs;  // config: the framework's settings as built
  // config: "argv" when an argument parser (HfArgumentParser, LightningCLI) built the settings from
  // the command line, "json"/"yaml" from a file it read; "" when the code sets them at this line.
  std::string parsed_from;
  // A knob's value as recorded ("" when not), and whether it is set on (a bool arrives as "1"/"0").
  std::string knob(const std::string& name) const {
    for (const auto& [k, v] : knobs)
      if (k == name) return v;
    return "";
  }
  // A numeric knob's value ("500", "3.0"), -1 when not recorded (0 when not a number).
  double knob_number(const std::string& name) const {
    const std::string v = knob(name);
    return v.empty() ? -1 : std::strtod(v.c_str(), nullptr);
  }
  bool knob_on(const std::string& name) const {
    const std::string v = knob(name);
    return !v.empty() && v != "0" && v != "False" && v != "false";
  }
};

// What the in-process agent saw (filled by the run layer from the agent's records).
// Where the run's wall time went (run/time_account.cpp from the agent's phases.py; docs/SCHEMA.md
// run.time_account): every second in exactly one bucket, the buckets add up to total_s.
struct TimeAccount {
  double total_s = 0;              // launch to exit
  double before_first_step_s = 0;  // imports, data preparation, model building: up to the first step
  double compile_s = 0;            // Dynamo/Inductor compilation, wherever it happened
  double train_steps_s = 0;        // the training steps less their data wait (and what is below)
  double eval_s = 0;               // forward passes outside training (eval mode / autograd off)
  double checkpoint_s = 0;         // torch.save, safetensors, the file writes hooks_io times
  double profiler_s = 0;           // trainscope's own profiler window: its start, stop and export
  double data_wait_s = 0;          // the training loop waiting for its batches (all of it, as its own clock reads)
  // ... of which the loop's own loading (num_workers=0) sat runnable while other work held the
  // cores: a core was missing, not data (the steps' data wait and the DataLoader model leave it out).
  double data_queued_s = 0;
  // ... of which the first fetches of each iterator over worker processes, one per worker: the wait
  // for the workers to start (each epoch's unless persistent_workers; seconds where they are spawned
  // and import torch), and how many such iterators.
  double data_start_s = 0;
  int64_t data_starts = 0;
  double eval_start_s = 0;         // of eval_s: the evaluation's loaders waiting for their workers to start
  // Of eval_s: before the first training step (a pass at step 0, a baseline before the loop). It
  // runs whatever the interval: step 0 is a multiple of any K (periodic-evaluation's gain).
  double eval_pre_s = 0;
  double other_s = 0;              // after the last step (teardown, logging), the rest
  double exit_s = 0;               // of other_s: the interpreter's exit, from the agent's last record (atexit) on
  double goodput_pct = 0;          // train_steps_s / job_s() x 100
  // The run as it would be without trainscope's profiler window: the scale of every share of the
  // run (goodput, run_fraction, the outside-step findings).
  double job_s() const { return total_s - profiler_s; }
  int64_t steps = 0, eval_spans = 0, eval_calls = 0, compile_frames = 0, checkpoints = 0;
  // Of eval_spans, those that called the model the loop trains (not an EMA copy, not a teacher):
  // evaluation however often it runs (periodic-evaluation).
  int64_t eval_spans_trained = 0;
  double steady_step_s = -1;       // the median step (for what a bucket costs in steps), -1 unknown
  // The start-up's sampling profile (agent startup.py): its samples, and the share of them with an
  // import in progress (the libraries loading) as seconds of before_first_step_s; -1 not profiled.
  // Its top user lines are AgentEvidence::sites of role "startup".
  int64_t startup_samples = 0;
  double startup_import_s = -1;
};

struct AgentEvidence {
  // Settings, recorded once.
  std::string torch_version, cuda_version, python_version;
  bool cuda_available = false;
  std::string device_name;          // torch.cuda.get_device_name
  int device_capability = 0;        // major*10+minor, 0 unknown
  std::string param_device;         // "cuda:0" / "cpu"
  std::string param_dtype;          // "torch.float32"
  std::string autocast_dtype;       // "" when no autocast seen during forward
  bool compiled = false;
  bool data_parallel = false, ddp = false;
  std::string sharding;             // "fsdp2" (fully_shard), "fsdp" (FullyShardedDataParallel), "" none
  int torch_threads = 0;
  std::string optimizer;            // class name
  std::string optimizer_impl;       // single_tensor | foreach | fused | unknown
  bool optimizer_has_fused = false, optimizer_has_foreach = false;
  // fused=True runs on the parameters' device: PyTorch's list of devices with fused optimizer
  // kernels (CUDA; the CPU from 2.4). Older agents: has_fused on CUDA parameters.
  bool optimizer_fused_on_device = false;
  // The optimizer's defaults that decide how many passes its update makes (SGD: momentum).
  double optimizer_momentum = 0, optimizer_weight_decay = 0;
  struct Loader {
    std::string dataset;
    int64_t batch_size = -1;
    int num_workers = -1;
    bool pin_memory = false;
    int prefetch_factor = -1;
    bool persistent_workers = false;
    bool iterable = false;  // an IterableDataset: workers split its stream only as its __iter__ does
    // How its workers start: "fork", "spawn" (the default inside torch.multiprocessing.spawn's
    // processes), "forkserver"; "" unknown (an older agent).
    std::string start_method{};
    std::string site_file{};  // the user's line that built it ("" unknown): its CodeSite of role dataloader
    int64_t site_line = 0;
  };
  std::vector<Loader> loaders;
  // Code outside torch asked get_worker_info() (agent hooks_data.py): a stream split across
  // workers by its own __iter__; false: each worker would yield all of an IterableDataset.
  bool stream_split = false;
  // The loop's loader reads an IterableDataset that nothing split by worker.
  bool unsplit_stream() const { return !loaders.empty() && loaders[0].iterable && !stream_split; }
  // Tensor bytes of the first batch the loop received (-1 unknown): a worker's hand-over of a
  // batch grows with it (loader_model.h).
  int64_t batch_bytes = -1;
  int world_size = 1, rank = 0;

  // Per-step measurements, summarised (medians over the steps after warm-up).
  int64_t steps = 0;
  // step_ms is the median step; data_wait_ms the mean wait per steady step and data_wait_pct its
  // share of the mean step (step_mean_ms, -1 unknown): one statistic, so ms and % agree.
  double step_ms = 0, data_wait_ms = 0, h2d_ms = 0, compute_ms = 0, gpu_ms = -1;
  double step_mean_ms = -1;
  // The 10th percentile of the steps' compute: a loop that idles in a long data wait can find its
  // thread pool asleep, and the first operator then waits for it (OpenMP threads spin briefly,
  // then sleep: GOMP_SPINCOUNT, OMP_WAIT_POLICY). Fed loops do not idle that long, so the
  // DataLoader model sizes the fixed loop from the steps that did not stall (-1 unknown).
  double compute_low_ms = -1;
  // The training process's CPU time per steady step, all its threads (the loading it does itself
  // included), from the process's CPU clock over unprofiled steady steps; -1 not read. Unlike
  // its compute (wall time), it holds none of the step's waits: a rank's wait for the others in
  // an all-reduce, a thread's wait for a core.
  double process_cpu_ms = -1;
  double optimizer_ms = 0, io_ms = 0;  // io: torch.save and file writes in the loop
  double data_wait_pct = 0, io_pct = 0, h2d_pct = 0;
  int64_t h2d_copies = 0, h2d_pageable = 0, h2d_blocking = 0;
  int64_t h2d_bytes_per_step = 0;
  double sample_getitem_ms = -1, collate_ms = -1;  // per sample / per batch, from workers
  double loading_cpu_share = -1;  // loading's CPU time / (its wall time - run delay) (0-1), every process; -1 unknown
  double loading_run_delay_share = -1;  // loading's run-queue delay / its wall time (0-1); -1 unknown
  int64_t item_calls_per_step = -1;  // .item() etc., when counted
  std::vector<double> mem_allocated_per_step;  // bytes: CUDA allocated, else the C heap in use, else RSS (mem_source)
  std::vector<double> mem_rss_per_step;        // the RSS at the same readings when mem_source is "heap", else empty
  std::vector<double> mem_rss_used_per_step;   // the same RSS less the bytes the C heap holds free (glibc keeps
                                               // freed memory resident); empty when the agent did not read them
  // The step number of each reading, and its segment for the trend (-1: warm-up or profiled,
  // left out; the profiler window raises memory once, so readings before and after it are
  // compared only among themselves). Empty from older agents' records.
  std::vector<double> mem_at_step;
  std::vector<int> mem_segment;
  double mem_slope_bytes_per_step = 0;
  double host_mem_total_bytes = -1;  // the host's RAM (/proc/meminfo MemTotal), for a CPU leak's horizon
  double mem_peak_bytes = -1, mem_reserved_bytes = -1, device_mem_total_bytes = -1;
  int64_t nonfinite_losses = 0;
  double model_flops_per_step = -1;  // for MFU, when the model's FLOPs are known (-1 unknown)
  bool profiler_window = false;
  std::vector<std::string> agent_errors;  // the agent's own failures, reported once
  // Added by the run layer (docs/AGENT.md): how steps were cut, the other phases, where memory
  // was read, and the main-process share of sample loading (num_workers=0 loads in the loop).
  std::string step_source;          // "optimizer" | "backward" | "dataloader" | "forward" | "" (no steps)
  // Gradient accumulation: backward calls per optimizer step (median, outside step(closure));
  // grad_accum_steps = that ratio rounded when it is >= 2, else 1. optimizer_steps_per_step: the
  // optimizers stepping in one loop iteration (a GAN: 2). -1 unknown (older agents).
  double backward_per_optimizer_step = -1;
  int64_t grad_accum_steps = 1;
  double optimizer_steps_per_step = -1;
  // TF32 as the program set it (read after step 1): 1 on, 0 off, -1 unknown; and
  // torch.get_float32_matmul_precision() ("highest" | "high" | "medium" | "").
  int tf32_matmul = -1, tf32_cudnn = -1;
  std::string float32_matmul_precision;
  // Autograd anomaly detection found on in a training step, measured over three steps (agent
  // anomaly.py): the stack captures PyTorch made and their time, the backward graphs' nodes, the
  // gradients they computed and their elements, and a NaN test's cost, fixed and per element.
  struct Anomaly {
    bool check_nan = true;
    int64_t captures_per_step = -1;
    double capture_ns_per_step = -1;
    int64_t nodes_per_step = 0, grad_tests_per_step = 0, grad_elems_per_step = 0;
    double nan_test_ns = 0, nan_elem_ns = 0;  // a NaN test's fixed part, and its part per element
    double nan_ms() const {
      return check_nan ? (static_cast<double>(grad_tests_per_step) * nan_test_ns +
                          static_cast<double>(grad_elems_per_step) * nan_elem_ns) / 1e6
                       : 0;
    }
    // The time per step it costs (ms), -1 unmeasured: the captures as timed, and the NaN tests.
    double cost_ms() const { return captures_per_step < 0 ? -1 : capture_ns_per_step / 1e6 + nan_ms(); }
  };
  std::optional<Anomaly> anomaly;
  double forward_ms = 0, backward_ms = 0, item_ms = 0;  // medians; item: host time in .item()
  std::string mem_source;           // "cuda" (allocated) | "heap" (C heap in use, CPU) | "rss" (process RSS, CPU)
  double main_process_loading_ms = 0;  // __getitem__+collate run inside the loop, per step
  int64_t dropped_records = 0;      // records the agent could not deliver (channel full)
  std::vector<std::string> notes;   // facts worth a line: no torch, agent not loaded, ...
  // The user's lines (sites.py): construction sites first, then per-call sites by host time.
  std::vector<CodeSite> sites;
  // The run's wall time by phase, when the agent's phases record arrived (run layer).
  std::optional<TimeAccount> time_account;
  // The site of one role: the loop's DataLoader (most fetches), the optimizer, the forward call, a
  // framework's configuration; nullptr when not recorded.
  const CodeSite* site(const std::string& role) const;
};

struct LabEvidence {
  struct Config {
    std::string name;  // fp32, bf16, bf16+compile, ...
    bool skipped = false;
    std::string skip_reason;
    double samples_per_s = 0, spread_pct = 0, peak_mem_bytes = 0;
    double data_wait_pct = -1;  // share of the measured step time spent in next(loader), -1 unknown
  };
  std::vector<Config> configs;
  std::string device;  // "cpu", "cuda", "cuda:N": where the lab ran (a CPU lab says little about Tensor Cores)
};

struct LoaderSweepEvidence {
  struct Point {
    int num_workers = 0;
    bool pin_memory = false;
    int prefetch_factor = -1;
    bool persistent_workers = false;
    double batches_per_s = 0, first_batch_ms = 0;
  };
  std::vector<Point> points;
  double getitem_ms = 0, collate_ms = 0;
  int recommended_workers = -1;
  double gpu_step_ms = -1;
};

// The ranks of a multi-process job side by side (filled by the run layer from each rank's
// agent records, or from one profiler trace per rank in `analyze DIR`; >= 2 ranks).
// busy_ms is a rank's time per step NOT spent waiting for the others in collectives:
//   busy = median(step - sync) + min over ranks of median(sync)
// with sync = backward (DDP's all-reduce runs inside it) + explicit collectives (agent), or the
// communication kernels per step (traces). The slowest rank sets the pace; every other rank waits
// wait_ms = slowest busy - own busy per step in the all-reduce. The slowest is the straggler
// when its busy time exceeds kStragglerRatio x the median rank's.
struct RanksEvidence {
  static constexpr double kStragglerRatio = 1.10;
  struct Rank {
    int rank = -1, local_rank = -1;
    int64_t pid = 0;             // 0 unknown (traces)
    int64_t steps = 0;
    double step_ms = 0, data_wait_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
    double comm_ms = 0;          // explicit collectives (agent) or communication kernels (traces)
    double busy_ms = 0, wait_ms = 0;
    // The medians busy_ms is computed from: time per step outside synchronisation, and inside it.
    double nonsync_ms = 0, sync_ms = 0;
    double rss_max_bytes = -1;
    bool straggler = false;
    std::string node;            // the node it ran on, in a multi-node job (`report DIR`); "" otherwise
  };
  std::vector<Rank> ranks;       // by rank
  int straggler_rank = -1;       // -1: no rank above the threshold
  double median_busy_ms = 0;     // the median rank's busy time
  double straggler_gap_ms = 0;   // slowest busy - median busy (>= 0 even without a straggler)
  std::string source;            // "agent" | "traces"
};

// The nodes of a multi-node job side by side (`trainscope report DIR`, from each node's
// node.json): what each has installed and its own evidence, so that differences between nodes
// become findings (node-mismatch) and the straggler's cause can be read from its own node.
struct NodesEvidence {
  struct Node {
    std::string name;            // its folder in the job directory (<host>-node<N>)
    int node_rank = -1;
    // Facts compared across nodes ("" / -1 unknown): (label, value) in a fixed order.
    std::vector<std::pair<std::string, std::string>> facts;
    // Its own evidence, for the straggler's cause.
    int cpu_cores = -1;
    double cpu_budget_cores = -1, host_cpu_mean_pct = -1, process_tree_cpu_mean_pct = -1, throttled_pct = -1;
    std::string throttle_reasons, threads_summary, loader;
    bool threads_oversubscribed = false;
    std::vector<std::string> finding_ids, finding_titles;  // its own diagnosis, top first
  };
  std::vector<Node> nodes;
};

// How the job ended, from `trainscope run` (the launcher and the stderr it passed through).
struct JobEvidence {
  std::vector<std::string> command;  // as started, secrets redacted: a fix that prefixes it (page-fault-churn)
  int exit_code = 0;     // when it exited
  int signal = 0;        // the signal that killed it, 0 if it exited
  bool stopped_by_steps = false;  // ended by --steps (a clean stop, not a failure)
  int64_t steps = 0;     // steps the agent saw (any marker)
  bool agent_loaded = false;
  std::vector<std::string> stderr_tail;  // its last stderr lines (ANSI escapes removed)
  // The process whose death failed the job ran its script to the end (its agent's exit record
  // came, no uncaught exception), then a crash signal ended it in the interpreter's teardown.
  bool died_at_exit = false;
  // The user's line its traceback came from (util failure_frame; role "raise"), if it left one.
  std::optional<CodeSite> failure_site;
  // The processes the kernel's OOM killer killed on this host while the job ran (/proc/vmstat's
  // oom_kill, before and after; -1 unknown). With a SIGKILL it names the job's cause of death.
  int64_t oom_kills = -1;
  bool oom_killed() const { return signal == 9 && oom_kills > 0; }
  bool failed() const { return !stopped_by_steps && (signal != 0 || exit_code != 0); }
  int status() const { return signal ? 128 + signal : exit_code; }
};

struct Evidence {
  std::optional<analysis::TraceAnalysis> trace;
  std::optional<SamplesEvidence> samples;
  std::optional<AgentEvidence> agent;
  std::optional<LabEvidence> lab;
  std::optional<LoaderSweepEvidence> loader;
  std::optional<RanksEvidence> ranks;  // multi-process jobs, >= 2 ranks
  std::optional<NodesEvidence> nodes;  // multi-node jobs (report DIR), >= 2 nodes
  std::optional<JobEvidence> job;      // trainscope run: how the job ended
};

}  // namespace ts::diagnose
