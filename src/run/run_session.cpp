#include "run/run_session.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <cstring>
#include <fstream>
#include <iterator>

#include "run/agent_channel.h"
#include "run/agent_locator.h"
#include "run/code_sites.h"
#include "run/debug_switch_warnings.h"
#include "run/died_at_exit.h"
#include "run/job_inspect.h"
#include "run/job_node.h"
#include "run/live_finding.h"
#include "run/live_panel.h"
#include "run/live_status.h"
#include "run/samples_evidence.h"
#include "run/time_account.h"
#include "run/stderr_tee.h"
#include "run/rank_summary.h"
#include "run/run_report.h"
#include "run/run_store.h"
#include "run/run_text.h"
#include "diagnose/diagnose.h"
#include "diagnose/thresholds.h"
#include "sample/procfs.h"
#include "util/failure_line.h"
#include "sample/sampler.h"
#include "sample/shm_fault_cost.h"
#include "store/recorder.h"
#include "trace/reader.h"
#include "util/error.h"
#include "util/private_dir.h"
#include "util/redact.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {

std::string utc_now(const char* fmt_str) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt_str, &tm);
  return buf;
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


constexpr int64_t kLiveDiagnoseAfterSteps = 5;
constexpr double kLiveDiagnoseEveryS = 5.0;
// --job-dir: how often a node rewrites its node.json with its ranks so far. A node that dies
// leaves the last one; `report DIR` calls a node whose file is older than a few of these gone.
constexpr double kNodeHeartbeatS = 10.0;
// In the job's first kNodeEarlyForS it is rewritten each second: a job that dies early (an OOM at
// the first steps, a rank that never joins) does so in its first seconds, and the node's last file
// should hold its ranks' steps by then. A rewrite is a walk over the records so far (about a ms).
constexpr double kNodeEarlyBeatS = 1.0, kNodeEarlyForS = 30.0;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void progress(const RunOptions& opt, const std::string& line) {
  if (!opt.quiet) fmt::print(stderr, "trainscope: {}\n", line);
}

}  // namespace

std::string default_out_dir() {
  std::string base = "trainscope-runs/" + utc_now("%Y%m%d-%H%M%S");
  std::string dir = base;
  for (int i = 2; fs::exists(dir); ++i) dir = fmt::format("{}-{}", base, i);
  return dir;
}

namespace {

// The run's moving parts while the child runs, shared by the stages below. The channel's reader
// thread calls back into `live` and `inspector` through the atomics, so stages may create and
// drop them while it runs.
struct Session {
  const RunOptions& opt;
  RunResult& res;
  AgentChannel channel;
  // Steps counted by the best marker any process reported so far (a better marker restarts
  // the count, as the agent does): what --steps' fallback waits for.
  std::atomic<int64_t> steps_seen{0};
  std::atomic<int> steps_level{0};
  std::unique_ptr<LiveStatusWriter> live;  // for `trainscope serve`; created once the child runs
  std::atomic<LiveStatusWriter*> live_ptr{nullptr};
  std::unique_ptr<LivePanel> panel;  // the live view on our terminal; created before the fork
  std::atomic<LivePanel*> panel_ptr{nullptr};
  std::unique_ptr<JobInspector> inspector;  // the job's libraries and live threads, once warm
  std::atomic<JobInspector*> inspector_ptr{nullptr};
  std::unique_ptr<store::Recorder> recorder;  // declared first: the sampler (its caller) goes first
  std::unique_ptr<sample::Sampler> sampler;
  double sampler_t0 = 0;
  std::unique_ptr<StderrTee> tee;  // the job's stderr passes through; its last lines are kept
  std::string command_line;  // the command, space-joined (live status, store)
  pid_t child = 0;           // the command's process
  int64_t oom_kills_before = -1;  // /proc/vmstat's oom_kill at launch (-1: unreadable)
  // --job-dir: this node's manifest, rewritten at start, each second in the job's
  // first kNodeEarlyForS, then every kNodeHeartbeatS, and at the end.
  std::optional<NodeManifest> node;
  double mono_to_unix = 0, node_written = 0, node_started = 0;

  Session(const RunOptions& o, RunResult& r) : opt(o), res(r) {}
};

// Writes the node's manifest (best effort: the run goes on, once with a warning).
void write_node(Session& s) {
  if (!s.node) return;
  s.node->updated_unix = unix_now();
  s.node_written = steady_s();
  if (!write_node_manifest(s.res.node_dir, *s.node)) {
    std::string line = s.res.node_dir + "/" + kNodeManifest + ": cannot write the node's manifest: " + std::strerror(errno);
    if (std::find(s.res.warnings.begin(), s.res.warnings.end(), line) == s.res.warnings.end()) {
      progress(s.opt, line);
      s.res.warnings.push_back(line);
    }
  }
}

// Stage 1 with --job-dir: this node's folder in the job directory and its first manifest (the
// job's identity, state "running"); a line when the directory already holds another job's nodes.
void prepare_node(Session& s) {
  const RunOptions& opt = s.opt;
  RunResult& res = s.res;
  const NodeStart start = node_start(opt.command, opt.node_rank, real_env);
  const std::string key = start.job.key();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(opt.job_dir, ec)) {
    NodeManifest other;
    std::string err, text;
    std::ifstream f(e.path() / kNodeManifest);
    if (!f) continue;
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (parse_node_manifest(text, other, err) && !key.empty() && !other.job.key().empty() && other.job.key() != key) {
      progress(opt, fmt::format("{} holds a node of another job ({}; this is {}): `trainscope report` will tell them "
                                "apart, but a job directory per job is clearer", opt.job_dir, other.job.key(), key));
      break;
    }
  }
  std::string note;
  const std::string host = host_name();
  res.out_dir = make_node_dir(opt.job_dir, host, start.node_rank, static_cast<long>(getpid()), note);
  res.node_dir = res.out_dir;
  if (!note.empty()) {
    progress(opt, note);
    res.warnings.push_back(note);
  }
  NodeManifest m;
  m.host = host;
  m.node = fs::path(res.out_dir).filename().string();
  m.node_rank = start.node_rank;
  m.node_rank_source = start.node_rank_source;
  m.job = start.job;
  m.trainscope_pid = getpid();
  for (const auto& a : redact_argv(opt.command)) m.command += (m.command.empty() ? "" : " ") + a;
  m.started_unix = unix_now();
  s.mono_to_unix = monotonic_to_unix_offset();
  s.node = std::move(m);
  s.node_started = steady_s();
  write_node(s);
  progress(opt, fmt::format("node {} of job {}: writing {}", s.node->node_rank >= 0 ? std::to_string(s.node->node_rank) : "(rank not known yet)",
                            key.empty() ? "(no job id: no SLURM_JOB_ID, --rdzv-id or master address)" : key, res.out_dir));
}

// Stage 1: the output directory (created, made absolute) and the start time.
void prepare_output(Session& s) {
  RunResult& res = s.res;
  if (!s.opt.job_dir.empty()) {
    prepare_node(s);
    res.started_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
    return;
  }
  res.out_dir = s.opt.out_dir.empty() ? default_out_dir() : s.opt.out_dir;
  std::error_code ec;
  fs::create_directories(res.out_dir, ec);
  if (ec || !fs::is_directory(res.out_dir))
    throw UserError(res.out_dir + ": cannot create the output directory: " + ec.message());
  res.out_dir = fs::absolute(res.out_dir).lexically_normal().string();
  res.started_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
}

// Stage 2: the agent channel's reader, and the environment that loads the agent into the child.
std::map<std::string, std::string> open_agent_channel(Session& s) {
  const std::string agent_dir = locate_agent_dir();
  s.channel.start([&s](const StepRecord& r) {
    int level = static_cast<int>(step_source(r.flags));
    if (level > s.steps_level.load()) {
      s.steps_level = level;
      s.steps_seen = 0;
    }
    if (level == s.steps_level.load() && r.step > s.steps_seen.load()) s.steps_seen = r.step;
    if (auto* l = s.live_ptr.load()) l->on_step(r);
    if (auto* p = s.panel_ptr.load()) p->model().on_step(r);
    if (auto* j = s.inspector_ptr.load()) j->on_step(r.pid, r.step);
  }, [&s](const TextRecord& t) {
    if (auto* l = s.live_ptr.load()) l->on_text(t);
  }, [&s](const GpuRecord& g) {
    if (auto* p = s.panel_ptr.load()) p->model().on_gpu(g);
  });
  std::map<std::string, std::string> env;
  const char* pp = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = agent_dir + (pp && *pp ? ":" + std::string(pp) : "");
  env["TRAINSCOPE_AGENT_FIFO"] = s.channel.path();
  env["TRAINSCOPE_OUT"] = s.res.out_dir;
  env["TRAINSCOPE_PROFILE_STEPS"] =
      s.opt.profile ? fmt::format("{}-{}", s.opt.profile_first, s.opt.profile_last) : "off";
  if (s.opt.steps > 0) env["TRAINSCOPE_STOP_AFTER"] = std::to_string(s.opt.steps);
  if (!s.opt.overrides.empty()) env["TRAINSCOPE_SET"] = overrides_env(s.opt.overrides);
  return env;
}

bool same_terminal(int a, int b) {
  struct stat sa {}, sb {};
  return isatty(a) && isatty(b) && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

// Stage 3 (before the fork): the job's stderr passes through (less Kineto's marker lines); its last
// lines are kept for the report.
void attach_stderr_tee(Session& s, Launcher& launcher) {
  try {
    // Kineto's marker lines go, unless the user asked for Kineto's log (kineto_markers.h).
    s.tee = std::make_unique<StderrTee>(std::getenv("KINETO_LOG_LEVEL") == nullptr);
    launcher.set_stderr(s.tee->child_fd());
    if (s.panel) {
      // The live view draws below the job's output: every byte for our terminal passes through it,
      // the job's stdout too when it is the same terminal (in the order the job wrote them).
      LivePanel* p = s.panel.get();
      s.tee->set_sink([p](const char* b, size_t n) { p->pass_through(b, n); });
      if (same_terminal(STDOUT_FILENO, STDERR_FILENO)) launcher.stdout_to_stderr(true);
    }
  } catch (const std::exception& e) {
    s.res.warnings.push_back(std::string("stderr not captured: ") + e.what());
    s.panel_ptr = nullptr;
    s.panel.reset();  // without the tee the job writes to the terminal itself: no room for a panel
  }
}

// Stage 3a (before the fork): the live view, drawn below the job's output on our terminal.
void open_live_panel(Session& s) {
  if (!s.opt.live_panel) return;
  s.panel = std::make_unique<LivePanel>(STDERR_FILENO);
  if (s.panel->active()) s.panel_ptr = s.panel.get();
  else {
    s.panel.reset();
    progress(s.opt, "no live view: stderr is not a terminal of at least 8 rows and 40 columns");
  }
}

// Stage 4 (the child runs): live status, the job inspector, the sampler and its recorder. Each
// is optional: one we cannot start is a warning, never the end of the run.
void start_watching(Session& s, pid_t pid) {
  const RunOptions& opt = s.opt;
  RunResult& res = s.res;
  res.command_shown = redact_argv(opt.command);
  // For the store and the live files: redacted like every other copy.
  for (const auto& a : res.command_shown) s.command_line += (s.command_line.empty() ? "" : " ") + a;
  if (opt.live) {
    s.live = std::make_unique<LiveStatusWriter>(opt.live_dir.empty() ? sample::live_dir() : opt.live_dir, pid,
                                                s.command_line, static_cast<double>(std::time(nullptr)));
    if (s.live->problem().empty()) {
      if (s.node) s.live->set_job(s.node->job.key(), s.node->node);
      s.live_ptr = s.live.get();
    } else {  // the run goes on; only serve's view of it is off
      std::string line = "live status for `trainscope serve` off: " + s.live->problem();
      progress(opt, line);
      res.warnings.push_back(line);
      s.live.reset();
    }
  }
  if (!opt.sample) return;
  try {
    s.inspector = std::make_unique<JobInspector>(pid, [&s] { return s.channel.snapshot(); });
    s.inspector_ptr = s.inspector.get();
    s.inspector->on_step(pid, s.steps_seen.load());  // steps seen before it existed
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("job not inspected: ") + e.what());
  }
  sample::SamplerConfig scfg;
  scfg.interval = opt.interval;
  scfg.root_pid = pid;
  try {
    s.sampler = std::make_unique<sample::Sampler>(scfg);
    if (s.node && s.sampler->nvml_available()) {
      s.node->driver_version = s.sampler->driver_version();
      s.node->gpus = static_cast<int>(s.sampler->gpus().size());
      if (!s.sampler->gpus().empty()) s.node->gpu_model = s.sampler->gpus().front().name;
    }
    res.samples_path = res.out_dir + "/samples.csv";
    // The store records the run and its samples; samples.csv is written alongside.
    store::RecorderConfig rc;
    rc.kind = "run";
    rc.command = s.command_line;
    rc.csv_path = res.samples_path;
    rc.db_path = opt.store ? (opt.store_path.empty() ? store::Store::default_path() : opt.store_path) : "";
    try {
      s.recorder = std::make_unique<store::Recorder>(rc, *s.sampler);
    } catch (const std::exception& e) {
      if (rc.db_path.empty()) throw;
      res.warnings.push_back(std::string("run not stored: ") + e.what());
      rc.db_path.clear();
      s.recorder = std::make_unique<store::Recorder>(rc, *s.sampler);
    }
    s.sampler_t0 = steady_s();
    if (s.live && s.recorder->store()) s.live->set_run_id(std::to_string(s.recorder->run_id()));
    s.sampler->start([&s](const sample::Tick& t) { s.recorder->on_tick(t); });
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("hardware sampler unavailable: ") + e.what());
    if (s.sampler && s.sampler->running()) s.sampler->stop();
    s.recorder.reset();
    s.sampler.reset();
    res.samples_path.clear();
  }
}

// Stage 5: waits for the child. Every second the live status is rewritten (with the rules' top
// finding on what is known so far every few seconds, a few ms of work on this thread; the child
// never waits for it). --steps: the agent ends the program itself after step N (SystemExit); if
// the program catches that and keeps going, we ask again with SIGINT, then SIGTERM.
void wait_for_child(Session& s, Launcher& launcher) {
  const RunOptions& opt = s.opt;
  double steps_reached_at = 0, live_written = 0, live_diagnosed = 0;
  int escalation = 0;
  s.res.exit = launcher.wait(std::chrono::milliseconds(20), [&] {
    const bool early = s.node && steady_s() - s.node_started < kNodeEarlyForS;
    if (s.node && steady_s() - s.node_written >= (early ? kNodeEarlyBeatS : kNodeHeartbeatS)) {
      fill_from_records(*s.node, s.channel.snapshot(), s.mono_to_unix);
      write_node(s);
    }
    if ((s.live || s.panel) && steady_s() - live_written >= 1.0) {
      live_written = steady_s();
      if (s.steps_seen.load() >= kLiveDiagnoseAfterSteps && live_written - live_diagnosed >= kLiveDiagnoseEveryS) {
        live_diagnosed = live_written;
        try {
          auto f = live_top_finding(s.channel.snapshot(), s.sampler.get());
          auto lf = f ? std::optional<LiveFinding>(to_live(*f)) : std::nullopt;
          if (s.live) s.live->set_top_finding(lf);
          if (s.panel) s.panel->model().set_top_finding(lf);
        } catch (const std::exception&) {
          // best effort: the final report diagnoses everything anyway
        }
      }
      if (s.live)
        s.live->write(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    }
    if (s.panel) s.panel->tick(steady_s());  // at most LivePanel::kRefreshPerS draws a second
    if (opt.steps <= 0 || s.steps_seen.load() < opt.steps) return;
    double now = steady_s();
    if (steps_reached_at == 0) steps_reached_at = now;
    if (escalation == 0 && now - steps_reached_at > 30) {
      progress(opt, fmt::format("the program is still running after step {}: sending SIGINT", opt.steps));
      launcher.signal_child(SIGINT);
      escalation = 1;
    } else if (escalation == 1 && now - steps_reached_at > 60) {
      progress(opt, "still running: sending SIGTERM");
      launcher.signal_child(SIGTERM);
      escalation = 2;
    }
  });
}

// Stage 6 (the child is gone): stops the watchers, closes the stored run, and returns every
// record the agents sent.
Records stop_watching(Session& s) {
  RunResult& res = s.res;
  if (s.inspector) {
    s.inspector_ptr = nullptr;
    res.job = s.inspector->finish();
  }
  if (s.sampler) s.sampler->stop();
  s.channel.stop();
  s.live_ptr = nullptr;
  s.live.reset();  // removes the live file: the job is over
  s.panel_ptr = nullptr;
  s.panel.reset();  // gives the terminal's rows back before anything else is printed
  if (s.recorder) {
    s.recorder->finish(res.exit.shell_code());
    if (s.recorder->store()) res.run_id = s.recorder->run_id();
  }
  return s.channel.snapshot();
}

// A stream read by several workers that never split it: each yields all of it, so the loop trains
// on every sample N times (PyTorch docs, torch.utils.data.IterableDataset). Whether the workers
// came from the script or from --set, the user should hear it; it is correctness, not speed, so
// a warning rather than a finding.
std::string repeated_stream_warning(const diagnose::AgentEvidence& e) {
  if (!e.unsplit_stream() || e.loaders[0].num_workers < 2) return "";
  return fmt::format("the loop's DataLoader reads an IterableDataset ({}) with num_workers={} and no code asked "
                     "torch.utils.data.get_worker_info(): each worker yields the whole stream, so every sample "
                     "comes {} times; split it by worker in its __iter__ (PyTorch docs, "
                     "torch.utils.data.IterableDataset)",
                     e.loaders[0].dataset, e.loaders[0].num_workers, e.loaders[0].num_workers);
}

// Stage 7: the agents' records, how the job ended and the sampler's series -> Evidence.
void summarise_evidence(Session& s, const Records& records) {
  RunResult& res = s.res;
  res.agent = summarise(records);
  res.stopped_by_steps = res.agent.stop_reason == "steps";
  res.evidence.agent = res.agent.evidence;
  res.evidence.agent->time_account =
      time_account(records, res.agent.main_pid, res.launch_mono_s, res.wall_s, res.agent.evidence.step_ms);
  add_startup_profile(records, res.agent.main_pid, res.agent.cwd, *res.evidence.agent);
  {
    // The host's RAM: a leak's horizon on the CPU (memory-growth says when the process would fill it).
    std::ifstream mi("/proc/meminfo");
    std::string text((std::istreambuf_iterator<char>(mi)), std::istreambuf_iterator<char>());
    res.evidence.agent->host_mem_total_bytes = sample::procfs::parse_meminfo(text).total_bytes;
  }
  if (!s.opt.overrides.empty())
    res.overrides = override_outcomes(s.opt.overrides, records,
                                      !res.agent.agent_loaded ? "the agent did not reach a Python process"
                                      : res.agent.evidence.torch_version.empty() ? "the script never imported torch"
                                                                                 : "the agent gave no answer (switched off?)");
  if (auto w = repeated_stream_warning(res.agent.evidence); !w.empty()) res.warnings.push_back(std::move(w));
  for (auto& w : debug_switch_warnings(sample::debug_switches_in_environ(), res.agent.evidence))
    res.warnings.push_back(std::move(w));
  res.evidence.ranks = summarise_ranks(records);  // torchrun: each rank on its own, the straggler
  {
    diagnose::JobEvidence job;
    job.command = redact_argv(s.opt.command);
    job.exit_code = res.exit.code;
    job.signal = res.exit.signal;
    job.stopped_by_steps = res.stopped_by_steps;
    job.agent_loaded = res.agent.agent_loaded && !res.agent.torch_unhooked;  // it could count the steps
    for (const auto& st : records.steps) job.steps = std::max(job.steps, st.step);
    for (const auto& [key, t] : records.step_totals) job.steps = std::max(job.steps, t.last_step);  // past the sample
    job.stderr_tail = res.stderr_tail;
    if (const int64_t now = sample::procfs::read_oom_kills(); now >= 0 && s.oom_kills_before >= 0)
      job.oom_kills = now - s.oom_kills_before;
    job.died_at_exit =
        job.failed() && job.steps > 0 && died_at_exit(s.child, job.signal, job.stderr_tail, records.texts);
    if (job.failed()) {
      // The job's working directory: the agent's, else the one it was started in (ours, unless
      // --cwd); a directory removed meanwhile leaves paths as the traceback printed them.
      std::error_code ec;
      std::string cwd = !res.agent.cwd.empty() ? res.agent.cwd : s.opt.cwd;
      if (cwd.empty()) cwd = std::filesystem::current_path(ec).string();
      job.failure_site = failure_site(job.stderr_tail, cwd);
    }
    res.evidence.job = job;
  }
  if (!s.sampler) return;
  sample::Summary sum = s.sampler->summary();
  auto se = samples_evidence(sum);
  // The series for charts, and where each step started on the sampler's clock.
  auto host = s.sampler->host_history();
  auto gpus = s.sampler->gpu_history();
  for (size_t i = 0; i < host.cpu_busy.size(); ++i) {
    se.series.t_s.push_back(host.cpu_busy[i].t_s);
    se.series.cpu_util_pct.push_back(host.cpu_busy[i].v);
  }
  if (!gpus.empty() && sum.primary_gpu >= 0 && static_cast<size_t>(sum.primary_gpu) < gpus.size()) {
    const auto& g = gpus[static_cast<size_t>(sum.primary_gpu)];
    for (size_t i = 0; i < g.util.size() && i < se.series.t_s.size(); ++i) se.series.gpu_util_pct.push_back(g.util[i].v);
    for (size_t i = 0; i < g.mem_used.size() && i < se.series.t_s.size(); ++i)
      se.series.gpu_mem_used_bytes.push_back(g.mem_used[i].v);
  }
  for (const auto& st : res.agent.steps)
    se.step_start_s.push_back((st.t_end_ns - st.dur_ns) / 1e9 - s.sampler_t0);
  // The CPU the job used while it trained: from the first step after warm-up to the last.
  const auto& steps = res.agent.steps;
  if (steps.size() > static_cast<size_t>(res.agent.warmup_steps) + 1) {
    const auto& first = steps[static_cast<size_t>(res.agent.warmup_steps)];
    // The profiler window's steps and the step after each (its export), on the sampler's clock.
    auto start_s = [&](const StepRecord& st) { return (st.t_end_ns - st.dur_ns) / 1e9 - s.sampler_t0; };
    auto end_s = [&](const StepRecord& st) { return st.t_end_ns / 1e9 - s.sampler_t0; };
    std::vector<std::pair<double, double>> window;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].flags & kStepProfiled)
        window.emplace_back(start_s(steps[i]), end_s(steps[std::min(i + 1, steps.size() - 1)]));
    steady_cpu(se, host, start_s(first), end_s(steps.back()), window);
  }
  fill_evidence(res.job, se);
  if (auto w = contention_warning(se, res.agent.evidence.torch_threads); !w.empty()) res.warnings.push_back(std::move(w));
  // The DataLoader model's worker hand-over, measured on this host now that the job has ended (it
  // never competes with the training): only when the script loaded through a DataLoader.
  if (!res.agent.evidence.loaders.empty()) se.shm_fault_ms_per_mib = sample::measure_shm_fault_cost().ms_per_mib;
  res.evidence.samples = se;
}

// The steps of the window that were recorded whole. A window stopped inside a step for its memory
// (agent/trainscope_agent/profiler_window.py: `cut_step`) ends in a partial step, whose time is
// not a step's: the trace's steps end before it (every rank's, at the earliest cut), unless the
// window stopped inside its first step, where the partial step is all there is (its operators
// still count; the agent's note says so).
analysis::AnalyseOptions whole_window_steps(const Records& records) {
  analysis::AnalyseOptions o;
  int64_t first = -1, last_whole = -1;
  for (const auto& t : records.texts) {
    if (t.kind != "trace" || t.get("cut_step").empty()) continue;
    const int64_t before_cut = t.get_int("cut_step", 0) - 1;
    first = std::max(first, t.get_int("first", -1));
    last_whole = last_whole < 0 ? before_cut : std::min(last_whole, before_cut);
  }
  if (first >= 0 && last_whole >= first) o.last_step = last_whole;
  return o;
}

// Stage 8: the profiler window's trace (one per rank under torchrun, analysed in parallel; rank
// 0's is the run's trace) through the trace engine.
void analyse_profiler_traces(Session& s, const Records& records) {
  const RunOptions& opt = s.opt;
  RunResult& res = s.res;
  const analysis::AnalyseOptions window = whole_window_steps(records);
  for (const auto& t : records.texts)
    if (t.kind == "trace" && !t.get("rank").empty() && fs::exists(t.get("path")) &&
        std::find(res.rank_traces.begin(), res.rank_traces.end(), t.get("path")) == res.rank_traces.end())
      res.rank_traces.push_back(t.get("path"));
  std::sort(res.rank_traces.begin(), res.rank_traces.end());
  if (res.rank_traces.size() >= 2) {
    try {
      progress(opt, fmt::format("analysing {} per-rank profiler traces", res.rank_traces.size()));
      analysis::MultiTraceAnalysis m = analysis::analyse_traces(res.rank_traces, window);
      if (!res.evidence.ranks) res.evidence.ranks = ranks_from_traces(m);
      res.trace_path = res.agent.trace_path;
      for (auto& t : m.traces)
        if (t.path == res.agent.trace_path) res.evidence.trace = std::move(t);
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("per-rank profiler traces not analysed: ") + e.what());
    }
  }
  if (res.evidence.trace) return;  // already analysed with the other ranks' traces
  if (!res.agent.trace_path.empty() && fs::exists(res.agent.trace_path)) {
    res.trace_path = res.agent.trace_path;
    try {
      progress(opt, "analysing the profiler window " + res.trace_path);
      const auto t0 = std::chrono::steady_clock::now();
      auto store = trace::read_trace(res.trace_path);
      const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      res.evidence.trace = analysis::analyse(store, window);
      // analyse() sees a store, not a file: the reports name the trace by this path.
      res.evidence.trace->path = res.trace_path;
      res.evidence.trace->read_seconds = read_s;
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("profiler trace not analysed: ") + e.what());
    }
  } else if (opt.profile && res.agent.evidence.steps > 0 && res.agent.evidence.steps < opt.profile_first) {
    // A window the same run would have reached: past step 1 (lazy initialisation, compilation),
    // inside the steps it ran, at most 5 steps long (a run of few, long steps records many ops each).
    const int64_t n = res.agent.evidence.steps;
    std::string hint;
    if (n >= 2) {
      const int64_t first = n >= 6 ? 3 : 2;
      const int64_t last = std::max(first, std::min(first + 4, n - 1));
      hint = fmt::format(" (--profile-steps {}-{} records steps this run reached)", first, last);
    }
    res.warnings.push_back(fmt::format("no profiler window: the run ended after {} steps, before step {}{}", n,
                                       opt.profile_first, hint));
  }
  // Too few steps for a steady one: the figures above are the warm-up's, and no per-step finding
  // is sized from them (diagnose/thresholds.h kMinAgentSteps).
  if (const int64_t n = res.agent.evidence.steps; n > 0 && n < diagnose::th::kMinAgentSteps)
    res.warnings.push_back(fmt::format(
        "{} training step{}: the first runs the warm-up (imports, lazy initialisation, the allocator's first "
        "blocks), so no per-step finding is sized from {}; a run of {} steps or more measures a steady one",
        n, n == 1 ? "" : "s", n == 1 ? "it" : "them", diagnose::th::kMinAgentSteps));
}

// Stage 9: report.json (also into the store), report.txt and report.html in the output directory.
void write_reports(Session& s) {
  const RunOptions& opt = s.opt;
  RunResult& res = s.res;
  res.report_path = res.out_dir + "/report.json";
  std::string json = write_report_json(res, opt);
  if (s.recorder && s.recorder->store()) {
    try {
      s.recorder->store()->put_report(res.run_id, json);
      s.recorder->store()->flush();
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("report not stored: ") + e.what());
    }
  }
  // Each file whole or not at all (a temporary renamed over it): a node of a job directory that
  // dies mid-write leaves no cut-off report for `report DIR` to trip on.
  if (!write_shared_file_atomically(res.out_dir + "/report.txt", run_text(res, opt, false)))
    res.warnings.push_back("report.txt not written: " + std::string(std::strerror(errno)));
  try {
    if (!write_shared_file_atomically(res.out_dir + "/report.html", report_html(res, opt)))
      res.warnings.push_back("report.html not written: " + std::string(std::strerror(errno)));
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("report.html not written: ") + e.what());
  }
}

// Stage 10 (--job-dir): the node's final manifest, after its reports, so that "finished" means
// they are there.
void finish_node(Session& s, const Records& records) {
  if (!s.node) return;
  s.node->state = "finished";
  s.node->ended_unix = unix_now();
  fill_from_records(*s.node, records, s.mono_to_unix);
  fill_from_result(*s.node, s.res);
  write_node(s);
}

}  // namespace

RunResult run_session(const RunOptions& opt) {
  if (opt.command.empty()) throw UserError("run: no command given (usage: trainscope run [options] -- COMMAND ...)");
  RunResult res;
  Session s(opt, res);
  prepare_output(s);
  Launcher launcher(opt.command, open_agent_channel(s));
  open_live_panel(s);
  if (opt.child_stdout_to_stderr) launcher.stdout_to_stderr(true);
  if (!opt.cwd.empty()) launcher.set_cwd(opt.cwd);
  attach_stderr_tee(s, launcher);
  const double t0 = steady_s();
  res.launch_mono_s = t0;
  s.oom_kills_before = sample::procfs::read_oom_kills();
  const pid_t pid = s.child = launcher.start();
  if (s.tee) s.tee->parent_after_fork();
  start_watching(s, pid);
  wait_for_child(s, launcher);
  res.wall_s = steady_s() - t0;
  if (s.tee) res.stderr_tail = s.tee->finish(200, kStderrTailKept);
  // The job's last stderr bytes are through: the rows go back before our own lines (the object
  // lives on until the channel's reader, which feeds it, has stopped).
  if (s.panel) s.panel->close();
  const Records records = stop_watching(s);
  summarise_evidence(s, records);
  analyse_profiler_traces(s, records);
  res.diagnosis = diagnose::diagnose(res.evidence);
  write_reports(s);
  finish_node(s, records);
  // Last: the trackers read the report just written, with the job's own Python.
  // Its problems join the warnings the text report ends with (report.json is written by then).
  for (auto& w : export_to_trackers(opt.trackers, res.agent.executable, locate_agent_dir(), res.report_path))
    res.warnings.push_back(std::move(w));
  return res;
}

std::vector<std::string> stderr_tail_shown(const std::vector<std::string>& tail) {
  return {tail.end() - static_cast<std::ptrdiff_t>(std::min(tail.size(), kStderrTailShown)), tail.end()};
}

std::string death_cause(const RunResult& r) {
  if (r.stopped_by_steps || (r.exit.signal == 0 && r.exit.code == 0)) return "";
  std::string why = r.exit.signal ? r.exit.describe() : fmt::format("exit status {}", r.exit.code);
  if (r.evidence.job && r.evidence.job->oom_killed()) return why + " by the kernel's OOM killer";
  if (std::string line = failure_line(r.stderr_tail, signal_from_outside(r.exit.signal)); !line.empty())
    why += ": " + line;
  return why;
}

}  // namespace ts::run
