#include "run/run_session.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "run/agent_channel.h"
#include "run/agent_locator.h"
#include "run/job_inspect.h"
#include "run/live_finding.h"
#include "run/live_status.h"
#include "run/samples_evidence.h"
#include "run/stderr_tee.h"
#include "run/rank_summary.h"
#include "run/run_report.h"
#include "run/run_store.h"
#include "run/run_text.h"
#include "diagnose/diagnose.h"
#include "sample/sampler.h"
#include "store/recorder.h"
#include "trace/reader.h"
#include "util/error.h"

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

RunResult run_session(const RunOptions& opt) {
  RunResult res;
  if (opt.command.empty()) throw UserError("run: no command given (usage: trainscope run [options] -- COMMAND ...)");
  res.out_dir = opt.out_dir.empty() ? default_out_dir() : opt.out_dir;
  std::error_code ec;
  fs::create_directories(res.out_dir, ec);
  if (ec || !fs::is_directory(res.out_dir))
    throw UserError(res.out_dir + ": cannot create the output directory: " + ec.message());
  res.out_dir = fs::absolute(res.out_dir).lexically_normal().string();
  res.started_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  std::string agent_dir = locate_agent_dir();

  AgentChannel channel;
  // Steps counted by the best marker any process reported so far (a better marker restarts
  // the count, as the agent does): what --steps' fallback below waits for.
  std::atomic<int64_t> steps_seen{0};
  std::atomic<int> steps_level{0};
  std::unique_ptr<LiveStatusWriter> live;  // for `trainscope serve`; created once the child runs
  std::atomic<LiveStatusWriter*> live_ptr{nullptr};
  std::unique_ptr<JobInspector> inspector;  // the job's libraries and live threads, once warm
  std::atomic<JobInspector*> inspector_ptr{nullptr};
  channel.start([&](const StepRecord& s) {
    int level = static_cast<int>(step_source(s.flags));
    if (level > steps_level.load()) {
      steps_level = level;
      steps_seen = 0;
    }
    if (level == steps_level.load() && s.step > steps_seen.load()) steps_seen = s.step;
    if (auto* l = live_ptr.load()) l->on_step(s);
    if (auto* j = inspector_ptr.load()) j->on_step(s.step);
  }, [&](const TextRecord& t) {
    if (auto* l = live_ptr.load()) l->on_text(t);
  });

  std::map<std::string, std::string> env;
  const char* pp = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = agent_dir + (pp && *pp ? ":" + std::string(pp) : "");
  env["TRAINSCOPE_AGENT_FIFO"] = channel.path();
  env["TRAINSCOPE_OUT"] = res.out_dir;
  env["TRAINSCOPE_PROFILE_STEPS"] =
      opt.profile ? fmt::format("{}-{}", opt.profile_first, opt.profile_last) : "off";
  if (opt.steps > 0) env["TRAINSCOPE_STOP_AFTER"] = std::to_string(opt.steps);

  Launcher launcher(opt.command, env);
  // The job's stderr passes through untouched; its last lines are kept for the report.
  std::unique_ptr<StderrTee> tee;
  try {
    tee = std::make_unique<StderrTee>();
    launcher.set_stderr(tee->child_fd());
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("stderr not captured: ") + e.what());
  }
  double t0 = steady_s();
  pid_t pid = launcher.start();
  if (tee) tee->parent_after_fork();
  std::string joined;
  for (const auto& a : opt.command) joined += (joined.empty() ? "" : " ") + a;
  if (opt.live) {
    live = std::make_unique<LiveStatusWriter>(opt.live_dir.empty() ? live_dir() : opt.live_dir, pid, joined,
                                              static_cast<double>(std::time(nullptr)));
    live_ptr = live.get();
  }

  if (opt.sample) {
    try {  // the job already runs: a look we cannot take is a warning, never the end of the run
      inspector = std::make_unique<JobInspector>(pid, [&channel] { return channel.snapshot(); });
      inspector_ptr = inspector.get();
      inspector->on_step(steps_seen.load());
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("job not inspected: ") + e.what());
    }
  }

  sample::SamplerConfig scfg;
  scfg.interval = opt.interval;
  scfg.root_pid = pid;
  std::unique_ptr<sample::Sampler> sampler;
  std::unique_ptr<store::Recorder> recorder;
  double sampler_t0 = 0;
  if (opt.sample) {
    try {
      sampler = std::make_unique<sample::Sampler>(scfg);
      res.samples_path = res.out_dir + "/samples.csv";
      // The store records the run and its samples; samples.csv is written alongside.
      store::RecorderConfig rc;
      rc.kind = "run";
      rc.command = joined;
      rc.csv_path = res.samples_path;
      rc.db_path = opt.store ? (opt.store_path.empty() ? store::Store::default_path() : opt.store_path) : "";
      try {
        recorder = std::make_unique<store::Recorder>(rc, *sampler);
      } catch (const std::exception& e) {
        if (rc.db_path.empty()) throw;
        res.warnings.push_back(std::string("run not stored: ") + e.what());
        rc.db_path.clear();
        recorder = std::make_unique<store::Recorder>(rc, *sampler);
      }
      sampler_t0 = steady_s();
      if (live && recorder->store()) live->set_run_id(std::to_string(recorder->run_id()));
      sampler->start([&recorder](const sample::Tick& t) { recorder->on_tick(t); });
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("hardware sampler unavailable: ") + e.what());
      if (sampler && sampler->running()) sampler->stop();
      recorder.reset();
      sampler.reset();
      res.samples_path.clear();
    }
  }

  // --steps: the agent ends the program itself after step N (SystemExit). If the program
  // catches that and keeps going, we ask again with SIGINT, then SIGTERM.
  double steps_reached_at = 0, live_written = 0, live_diagnosed = 0;
  int escalation = 0;
  res.exit = launcher.wait(std::chrono::milliseconds(20), [&] {
    if (live && steady_s() - live_written >= 1.0) {
      live_written = steady_s();
      // The rules on what is known so far, every few seconds once past warm-up (a few ms of
      // work on this thread; the child never waits for it).
      if (steps_seen.load() >= kLiveDiagnoseAfterSteps && live_written - live_diagnosed >= kLiveDiagnoseEveryS) {
        live_diagnosed = live_written;
        try {
          auto f = live_top_finding(channel.snapshot(), sampler.get());
          live->set_top_finding(f ? std::optional<LiveFinding>(to_live(*f)) : std::nullopt);
        } catch (const std::exception&) {
          // best effort: the final report diagnoses everything anyway
        }
      }
      live->write(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    }
    if (opt.steps <= 0 || steps_seen.load() < opt.steps) return;
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
  res.wall_s = steady_s() - t0;
  if (tee) res.stderr_tail = tee->finish();
  if (inspector) {
    inspector_ptr = nullptr;
    res.job = inspector->finish();
  }
  if (sampler) sampler->stop();
  channel.stop();
  live_ptr = nullptr;
  live.reset();  // removes the live file: the job is over
  if (recorder) {
    recorder->finish(res.exit.shell_code());
    if (recorder->store()) res.run_id = recorder->run_id();
  }

  Records records = channel.snapshot();
  res.agent = summarise(records);
  res.stopped_by_steps = res.agent.stop_reason == "steps";
  res.evidence.agent = res.agent.evidence;
  res.evidence.ranks = summarise_ranks(records);  // torchrun: each rank on its own, the straggler
  {
    diagnose::JobEvidence job;
    job.exit_code = res.exit.code;
    job.signal = res.exit.signal;
    job.stopped_by_steps = res.stopped_by_steps;
    job.agent_loaded = res.agent.agent_loaded;
    for (const auto& s : records.steps) job.steps = std::max(job.steps, s.step);
    job.stderr_tail = res.stderr_tail;
    res.evidence.job = job;
  }

  if (sampler) {
    sample::Summary sum = sampler->summary();
    auto se = samples_evidence(sum);
    // The series for charts, and where each step started on the sampler's clock.
    auto host = sampler->host_history();
    auto gpus = sampler->gpu_history();
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
    for (const auto& s : res.agent.steps)
      se.step_start_s.push_back((s.t_end_ns - s.dur_ns) / 1e9 - sampler_t0);
    fill_evidence(res.job, se);
    res.evidence.samples = se;
  }

  // One profiler trace per rank (torchrun): analysed in parallel; rank 0's is the run's trace.
  for (const auto& t : records.texts)
    if (t.kind == "trace" && !t.get("rank").empty() && fs::exists(t.get("path")) &&
        std::find(res.rank_traces.begin(), res.rank_traces.end(), t.get("path")) == res.rank_traces.end())
      res.rank_traces.push_back(t.get("path"));
  std::sort(res.rank_traces.begin(), res.rank_traces.end());
  if (res.rank_traces.size() >= 2) {
    try {
      progress(opt, fmt::format("analysing {} per-rank profiler traces", res.rank_traces.size()));
      analysis::MultiTraceAnalysis m = analysis::analyse_traces(res.rank_traces);
      if (!res.evidence.ranks) res.evidence.ranks = ranks_from_traces(m);
      res.trace_path = res.agent.trace_path;
      for (auto& t : m.traces)
        if (t.path == res.agent.trace_path) res.evidence.trace = std::move(t);
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("per-rank profiler traces not analysed: ") + e.what());
    }
  }
  // The profiler window's trace, through the trace engine.
  if (res.evidence.trace) {
    // already analysed with the other ranks' traces
  } else if (!res.agent.trace_path.empty() && fs::exists(res.agent.trace_path)) {
    res.trace_path = res.agent.trace_path;
    try {
      progress(opt, "analysing the profiler window " + res.trace_path);
      auto store = trace::read_trace(res.trace_path);
      res.evidence.trace = analysis::analyse(store);
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("profiler trace not analysed: ") + e.what());
    }
  } else if (opt.profile && res.agent.evidence.steps > 0 && res.agent.evidence.steps < opt.profile_first) {
    res.warnings.push_back(fmt::format("no profiler window: the run ended after {} steps, before step {}",
                                       res.agent.evidence.steps, opt.profile_first));
  }

  res.diagnosis = diagnose::diagnose(res.evidence);

  res.report_path = res.out_dir + "/report.json";
  std::string json = write_report_json(res, opt);
  if (recorder && recorder->store()) {
    try {
      recorder->store()->put_report(res.run_id, json);
      recorder->store()->flush();
    } catch (const std::exception& e) {
      res.warnings.push_back(std::string("report not stored: ") + e.what());
    }
  }
  {
    std::ofstream txt(res.out_dir + "/report.txt");
    txt << run_text(res, opt, false);
  }
  try {
    std::ofstream html(res.out_dir + "/report.html");
    html << report_html(res, opt);
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("report.html not written: ") + e.what());
  }
  return res;
}

std::string death_cause(const RunResult& r) {
  if (r.stopped_by_steps || (r.exit.signal == 0 && r.exit.code == 0)) return "";
  std::string why = r.exit.signal ? r.exit.describe() : fmt::format("exit status {}", r.exit.code);
  if (!r.stderr_tail.empty()) why += ": " + r.stderr_tail.back();
  return why;
}

}  // namespace ts::run
