// job-failed: the job ended with a failure before its first step (an import error, a bad path, a
// crash while building the model), so there is nothing to measure: the report says so, with the
// last lines the job wrote to stderr, instead of a performance verdict on no evidence.
// Evidence: trainscope run's exit status (not a --steps stop) and the agent's step count of 0.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/failure_line.h"

namespace ts::diagnose::rules {

std::optional<Finding> job_failed(const Evidence& ev) {
  if (!ev.job || !ev.job->failed() || ev.job->steps > 0) return std::nullopt;
  const auto& j = *ev.job;
  Finding f = make("job-failed", Bottleneck::Health, "run");
  add(f, "exit_status", j.status(), "");
  if (j.signal) add(f, "signal", j.signal, "");
  f.severity = Severity::Critical;
  f.confidence = 1.0;
  f.recoverable_fraction = 0;
  f.title = j.signal ? fmt::format("The job failed before the first step (killed by signal {}, exit status {})", j.signal,
                                   j.status())
                     : fmt::format("The job failed before the first step (exit status {})", j.status());
  f.gain = "";  // nothing to speed up until it runs
  // A Python traceback's exception line, which its message may follow for many lines; the run
  // report lists the lines around it.
  const std::string why = failure_line(j.stderr_tail);
  f.explanation = why.empty() ? std::string("The command ended with a failure before any training step ran, and wrote "
                                            "nothing to stderr. There is no step to measure.")
                              : "The command ended with a failure before any training step ran. It said: " + why;
  f.fix = "Fix the error the job reported, then run it again under trainscope.";
  return f;
}

}  // namespace ts::diagnose::rules
