#include "diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "diagnose/account.h"
#include "diagnose/rules/rule.h"
#include "diagnose/scenario.h"
#include "util/failure_line.h"

namespace ts::diagnose {
namespace {

// A job that never reached its first step (failed, or exited cleanly): its finding is the verdict.
bool before_first_step(const Finding& f) { return f.id == "job-failed" || f.id == "no-training-step"; }

// The account's next causes after the top one: " After it: launch-bound 13.2 ms, ..." (at most 3).
std::string what_is_left(const Diagnosis& d) {
  std::string s;
  int n = 0;
  for (size_t i = 1; i < d.findings.size() && n < 3; ++i) {
    const Finding& f = d.findings[i];
    if (f.recoverable_fraction < 0.01) continue;
    s += n++ ? ", " : " After it: ";
    s += f.claimed_ms > 0 ? fmt::format("{} {:.1f} ms", f.id, f.claimed_ms) : fmt::format("{} {:.0f}%", f.id, 100 * f.recoverable_fraction);
  }
  if (n) s += ".";
  return s;
}

std::string verdict_for(const Diagnosis& d) {
  // A trace of start-up: say so first; every other number in it describes start-up too.
  if (!d.findings.empty() && d.findings.front().id == "warm-up")
    return d.findings.front().title + ". Profile steps after warm-up before acting on the rest.";
  const Finding* healthy = nullptr;
  for (const auto& f : d.findings)
    if (f.id == "compute-bound") healthy = &f;
  if (d.findings.empty())
    return d.scenario == Scenario::Unknown ? "No finding: the evidence shows no bottleneck trainscope checks for."
                                           : std::string("No finding. ") + scenario_title(d.scenario) + ".";
  const Finding& top = d.findings.front();
  if (before_first_step(top)) return top.title + ".";  // nothing else was measured
  if (top.severity == Severity::Critical || top.recoverable_fraction >= th::kVerdictMinRecoverable)
    return top.recoverable_fraction > 0 && top.severity != Severity::Critical
               ? fmt::format("{}. Fixing it {}{}{}.{}", top.title, top.outside_step ? "makes the run " : "gives ",
                             gain_text(top.recoverable_fraction),
                             top.claimed_ms > 0 ? fmt::format(" ({:.1f} of {:.1f} ms per step)", top.claimed_ms, top.step_ms) : "",
                             what_is_left(d))
               : fmt::format("{} ({}).", top.title, top.gain);
  if (!healthy) {
    if (top.recoverable_fraction > 0)
      return fmt::format("No large bottleneck: the biggest finding, {}, is worth {}.", top.id, gain_text(top.recoverable_fraction));
    return fmt::format("No bottleneck trainscope can size; {} finding{} below.", d.findings.size(),
                       d.findings.size() == 1 ? "" : "s");
  }
  // Healthy: say so, then the biggest thing left.
  std::string v = healthy->title + ".";
  for (const auto& f : d.findings)
    if (&f != healthy && f.recoverable_fraction > 0) {
      v += fmt::format(" Largest opportunity: {}.", f.id);
      break;
    }
  return v;
}

// The scenario line ends with the account's dominant cause, so that it and the verdict tell one story.
std::string dominant_cause(const Diagnosis& d) {
  if (d.findings.empty()) return "";
  const Finding& top = d.findings.front();
  if (top.id == "warm-up" || top.severity == Severity::Critical || top.recoverable_fraction < th::kVerdictMinRecoverable)
    return "";
  // The share is what the fix gives back, not the cost's own size (the verdict's title says that).
  return fmt::format("; the largest cost is {}: its fix gives back {:.0f}% of the {} ({})", top.id,
                     100 * top.recoverable_fraction, top.outside_step ? "run" : "step", gain_text(top.recoverable_fraction));
}

// A warm-up finding of medium or higher severity leads: the trace itself is the problem.
// With the run accounted (run.time_account), a step finding's share of the run is its share of the
// step times the steps' share of the run (training steps and their data wait): one scale with the
// findings about the time outside the step. The waits for DataLoader workers to start are not the
// steady steps' (their steps are left out of the step's figures; worker-restarts has them).
void on_run_scale(std::vector<Finding>& fs, const Evidence& ev) {
  if (!ev.agent || !ev.agent->time_account || ev.agent->time_account->job_s() <= 0) return;
  const TimeAccount& t = *ev.agent->time_account;
  const double steps_s = t.train_steps_s + t.data_wait_s - std::clamp(t.data_start_s, 0.0, t.data_wait_s);
  const double steps_share = std::clamp(steps_s / t.job_s(), 0.0, 1.0);
  for (auto& f : fs)
    if (!f.outside_step) f.run_fraction = std::max(0.0, f.recoverable_fraction) * steps_share;
}

void lead_with_warm_up(std::vector<Finding>& fs) {
  auto it = std::find_if(fs.begin(), fs.end(), [](const Finding& f) { return f.id == "warm-up"; });
  if (it == fs.end() || it->severity < Severity::Medium) return;
  if (!fs.empty() && fs.front().severity == Severity::Critical) return;
  std::rotate(fs.begin(), it, it + 1);
}

// A job that failed after some steps: the failure first, then what the steps that ran show (a run
// cut short weighs its one-off costs, start-up and compilation, against fewer steps than it meant
// to run). "The job failed after 7 steps (exit status 3: <its exception line>). Of the steps that ran: "
std::string failed_mid_run(const Evidence& ev) {
  const JobEvidence& j = *ev.job;
  const std::string said = failure_line(j.stderr_tail, signal_from_outside(j.signal));  // as the run line says it
  const std::string steps = fmt::format("{} step{}", j.steps, j.steps == 1 ? "" : "s");
  if (j.died_at_exit) {
    // Training is done and its results written; only the exit status fails (a scheduler, a
    // pipeline's next stage). In a distributed job the usual cause is a process group alive
    // during the interpreter's shutdown: DDP's reference cycles keep it until the last garbage
    // collection, where gloo's worker threads release work that needs the GIL.
    const bool distributed = ev.ranks || (ev.agent && (ev.agent->ddp || !ev.agent->sharding.empty() ||
                                                       ev.agent->world_size > 1));
    const std::string how = j.signal ? fmt::format("signal {}{}", j.signal, said.empty() ? "" : ": " + said)
                                     : fmt::format("exit status {}{}", j.exit_code, said.empty() ? "" : ": " + said);
    return fmt::format(
        "The job's script ran to its end ({}), then the job failed while Python shut down ({}): a crash in the "
        "interpreter's teardown, after training. {}Of the steps that ran: ",
        steps, how,
        distributed ? "A process group still alive at exit is a known cause: free the model (del model, optimizer; "
                      "gc.collect()) and call torch.distributed.destroy_process_group() before the script ends. "
                    : "");
  }
  if (j.oom_killed())
    return fmt::format("The job was killed by the kernel's OOM killer after {} (signal 9 while /proc/vmstat's oom_kill "
                       "rose by {}: the host, or the job's memory cgroup, ran out of memory). Of the steps that ran: ",
                       steps, j.oom_kills);
  // A signal may be the user's Ctrl-C or a scheduler's limit as much as a crash: "ended", not "failed".
  if (j.signal)
    return fmt::format("The job ended by signal {} after {}{}. Of the steps that ran: ", j.signal, steps,
                       said.empty() ? "" : " (" + said + ")");
  // Where in the user's code, when its traceback says: "... (exit status 1: ValueError: bad batch, at train.py:88)".
  const std::string at = j.failure_site ? fmt::format(", at {}:{}", j.failure_site->path.empty() ? j.failure_site->file
                                                                                               : j.failure_site->path,
                                                     j.failure_site->line)
                                        : "";
  return fmt::format("The job failed after {} (exit status {}{}{}). Of the steps that ran: ", steps, j.exit_code,
                     said.empty() ? "" : ": " + said, said.empty() ? "" : at);
}

}  // namespace

double speedup(double f) { return 1.0 / (1.0 - std::clamp(f, 0.0, 0.99)); }

std::string gain_text(double f) {
  double s = speedup(f);
  if (f <= 0) return "no direct speed-up";
  if (s < 1.01) return "under 1% faster";
  if (s < 1.095) return fmt::format("up to {:.0f}% faster", (s - 1) * 100);
  return fmt::format("up to {:.1f}x", s);
}

void rank(std::vector<Finding>& fs) {
  std::stable_sort(fs.begin(), fs.end(), [](const Finding& a, const Finding& b) {
    // A job that never reached its first step: that is the report's first line, whatever else.
    bool af = before_first_step(a), bf = before_first_step(b);
    if (af != bf) return af;
    // Critical findings (wrong device, diverged loss) come first: nothing else matters until fixed.
    bool ac = a.severity == Severity::Critical, bc = b.severity == Severity::Critical;
    if (ac != bc) return ac;
    // One scale: the run's wall time where the run was accounted, else the step's.
    if (a.run_fraction >= 0 && b.run_fraction >= 0) {
      if (a.run_fraction != b.run_fraction) return a.run_fraction > b.run_fraction;
    } else if (a.recoverable_fraction != b.recoverable_fraction) {
      return a.recoverable_fraction > b.recoverable_fraction;
    }
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return a.id < b.id;
  });
}

Diagnosis diagnose(const Evidence& ev) {
  Diagnosis d;
  for (const auto& r : rules::all_rules()) {
    if (auto f = r.fn(ev)) d.findings.push_back(std::move(*f));
  }
  // No training step anywhere in the job, counted by the agent (no-training-step needs it; a
  // failure before the first step, job-failed, is counted only with it): whatever the samples saw
  // was start-up, so no finding about the training stands beside the one that says so
  // (pytorch/examples' FSDP2 example failing in init_process_group got "thread-oversubscription"
  // from its two ranks importing torch). Without the agent a job may have trained uncounted, and
  // the samples are all there is.
  if (ev.job && ev.job->agent_loaded)
    if (auto it = std::find_if(d.findings.begin(), d.findings.end(), before_first_step); it != d.findings.end()) {
      Finding alone = std::move(*it);
      d.findings.clear();
      d.findings.push_back(std::move(alone));
    }
  const StepAccount acc = step_account(ev);
  d.step_ms = acc.step_ms;
  d.idle_share = acc.idle_share;
  settle(d.findings, acc);
  on_run_scale(d.findings, ev);
  rank(d.findings);
  lead_with_warm_up(d.findings);
  auto sc = classify(ev, d.findings);
  d.scenario = sc.scenario;
  d.scenario_reason = sc.reason + dominant_cause(d);
  d.verdict = verdict_for(d);
  // Never "no large bottleneck" while the GPU idles most of the window.
  if (ev.trace && ev.trace->gpu.present && ev.trace->gpu.idle_pct >= th::kGpuIdleMostPct &&
      d.verdict.starts_with("No large bottleneck"))
    d.verdict = fmt::format("The GPU idles {:.0f}% of the time, but no fix trainscope can size gives more than {}; "
                            "see GPU idle by cause.",
                            ev.trace->gpu.idle_pct, gain_text(th::kVerdictMinRecoverable));
  if (ev.job && ev.job->failed() && ev.job->steps > 0) d.verdict = failed_mid_run(ev) + d.verdict;
  return d;
}

Diagnosis merge(const std::vector<Diagnosis>& parts, const std::vector<std::string>& labels) {
  if (parts.size() == 1) return parts.front();
  Diagnosis out;
  std::map<std::string, size_t> index;
  std::map<std::string, std::vector<std::string>> where;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string label = i < labels.size() ? labels[i] : fmt::format("trace {}", i);
    for (const auto& f : parts[i].findings) {
      where[f.id].push_back(label);
      auto it = index.find(f.id);
      if (it == index.end()) {
        index[f.id] = out.findings.size();
        out.findings.push_back(f);
      } else if (f.recoverable_fraction > out.findings[it->second].recoverable_fraction) {
        out.findings[it->second] = f;
      }
    }
  }
  for (auto& f : out.findings) {
    const auto& w = where[f.id];
    f.evidence.push_back({"traces_affected", double(w.size()), "count"});
    std::string list;
    for (size_t i = 0; i < w.size() && i < 8; ++i) list += (i ? ", " : "") + w[i];
    if (w.size() > 8) list += fmt::format(", +{} more", w.size() - 8);
    f.source += " (" + list + ")";
  }
  // The job's scenario: the most common one across ranks (first wins ties).
  std::map<Scenario, int> votes;
  for (const auto& p : parts) votes[p.scenario]++;
  const Diagnosis* pick = &parts.front();
  for (const auto& p : parts)
    if (votes[p.scenario] > votes[pick->scenario]) pick = &p;
  out.scenario = pick->scenario;
  // One account again: the worst instance of each id may come from different traces, each already
  // settled against its own trace's idle share; together they must still fit one step.
  out.step_ms = pick->step_ms;
  settle(out.findings, {pick->step_ms, -1});
  rank(out.findings);
  lead_with_warm_up(out.findings);
  out.scenario_reason = pick->scenario_reason;
  out.verdict = verdict_for(out);
  return out;
}

}  // namespace ts::diagnose
