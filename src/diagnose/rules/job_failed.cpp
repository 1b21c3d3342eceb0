// job-failed: the job ended with a failure before its first step (an import error, a bad path, a
// crash while building the model), so there is nothing to measure: the report says so, with the
// last lines the job wrote to stderr, instead of a performance verdict on no evidence.
// Evidence: trainscope run's exit status (not a --steps stop) and the agent's step count of 0.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/failure_line.h"

namespace ts::diagnose::rules {

namespace {

// What both findings of a job that ended before its first step carry: nothing to speed up.
Finding ended_before_first_step(const char* id, const JobEvidence& j) {
  Finding f = make(id, Bottleneck::Health, "run");
  add(f, "exit_status", j.status(), "");
  f.severity = Severity::Critical;
  f.confidence = 1.0;
  f.recoverable_fraction = 0;
  f.gain = "";  // nothing to speed up until it runs
  return f;
}

}  // namespace

std::optional<Finding> job_failed(const Evidence& ev) {
  if (!ev.job || !ev.job->failed() || ev.job->steps > 0) return std::nullopt;
  const auto& j = *ev.job;
  Finding f = ended_before_first_step("job-failed", j);
  if (j.signal) add(f, "signal", j.signal, "");
  if (j.oom_killed()) {
    f.title = "The job was killed by the kernel's OOM killer before the first step (signal 9)";
    add(f, "oom_kills", static_cast<double>(j.oom_kills), "count");
    f.explanation = fmt::format(
        "The kernel's OOM killer killed {} process{} on this host while the job ran (/proc/vmstat's oom_kill counter), "
        "and the job died of SIGKILL before any training step: the host (or the job's memory cgroup) ran out of "
        "memory while it loaded its data or built its model. There is no step to measure.",
        j.oom_kills, j.oom_kills == 1 ? "" : "es");
    f.fix = "Load less at once (memory-map the dataset, build the model on the meta device or in lower precision) or "
            "run where more memory is free; `dmesg` names the process it killed and its RSS.";
    return f;
  }
  f.title = j.signal ? fmt::format("The job failed before the first step (killed by signal {}, exit status {})", j.signal,
                                   j.status())
                     : fmt::format("The job failed before the first step (exit status {})", j.status());
  // A Python traceback's exception line, which its message may follow for many lines; the run
  // report lists the lines around it.
  const std::string why = failure_line(j.stderr_tail);
  f.explanation = why.empty() ? std::string("The command ended with a failure before any training step ran, and wrote "
                                            "nothing to stderr. There is no step to measure.")
                              : "The command ended with a failure before any training step ran. It said: " + why;
  f.fix = "Fix the error the job reported, then run it again under trainscope.";
  if (j.failure_site) f.sites.push_back(site_ref(*j.failure_site, "the job's traceback ends here in your code"));
  return f;
}

// no-training-step: the job ended cleanly (exit status 0, not a --steps stop) and the agent, loaded
// in it, saw no step from any marker in any process: a script that decided not to train
// (pytorch/examples' FSDP2 example prints "Unable to locate sufficient 2 gpus" and exits 0) or whose
// loop never ran. Whatever the samples saw was start-up, not training: the report says this alone.
std::optional<Finding> no_training_step(const Evidence& ev) {
  if (!ev.job || ev.job->failed() || ev.job->stopped_by_steps || ev.job->steps > 0 || !ev.job->agent_loaded)
    return std::nullopt;
  Finding f = ended_before_first_step("no-training-step", *ev.job);
  f.title = "The job ended before its first training step (exit status 0): there is no step to measure";
  const std::string said = failure_line(ev.job->stderr_tail);  // a traceback's exception, else its last words
  f.explanation =
      "The command exited normally, but no training step ran in any of its processes: no optimizer step, no "
      "backward(), no DataLoader batch, no model call. The script may have decided not to train (a check for GPUs, a "
      "missing argument it defaults around, a dry-run flag), or its loop ran zero times (an empty dataset, epochs "
      "already done when resuming). " +
      (said.empty() ? std::string("It wrote nothing to stderr; its own output (stdout) says why.")
                    : "On stderr it said: " + said);
  f.fix = "Make the script reach its training loop (what it printed says why it did not), then run it again under "
          "trainscope.";
  return f;
}

}  // namespace ts::diagnose::rules
