#include "run/run_text.h"

#include <cmath>
#include <fmt/format.h>

#include "diagnose/thresholds.h"
#include "report/report.h"
#include "util/format.h"
#include "util/redact.h"

namespace ts::run {
namespace {

std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100.0 * part / whole) : "-"; }

std::string join_cmd(const std::vector<std::string>& c) {
  std::string s;
  for (const auto& a : c) s += (s.empty() ? "" : " ") + a;
  return s;
}

// torchrun: every rank side by side. busy = the rank's time per step not spent waiting for the
// others in collectives; wait = what it spends waiting for the slowest (diagnose/evidence.h).
std::string ranks_text(const RunResult& r, const char* bold, const char* reset) {
  if (!r.evidence.ranks || r.evidence.ranks->ranks.empty()) return "";
  const auto& rk = *r.evidence.ranks;
  std::string o = fmt::format("\n{}Ranks{} ({} ranks, medians in ms per step from {}; wait = time in collectives\n"
                              "waiting for the slowest rank, busy = the rest):\n",
                              bold, reset, rk.ranks.size(), rk.source == "agent" ? "each rank's agent" : "each rank's trace");
  o += fmt::format("  {:>4} {:>5} {:>7} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5}\n", "rank", "local", "pid", "steps",
                   "step", "data", "bwd", "busy", "wait", "wait%");
  for (const auto& x : rk.ranks) {
    o += fmt::format("  {:>4} {:>5} {:>7} {:>5} {:>7.1f} {:>7.1f} {:>7} {:>7.1f} {:>7.1f} {:>4.0f}%{}\n", x.rank,
                     x.local_rank >= 0 ? std::to_string(x.local_rank) : "-", x.pid > 0 ? std::to_string(x.pid) : "-",
                     x.steps, x.step_ms, x.data_wait_ms,
                     rk.source == "agent" ? fmt::format("{:.1f}", x.backward_ms) : std::string("-"), x.busy_ms,
                     x.wait_ms, x.step_ms > 0 ? 100.0 * x.wait_ms / x.step_ms : 0.0, x.straggler ? " *" : "");
  }
  if (rk.straggler_rank >= 0)
    o += fmt::format("  * straggler: rank {} ({:.1f} ms busier per step than the median rank)\n", rk.straggler_rank,
                     rk.straggler_gap_ms);
  else
    o += fmt::format("  no straggler: the slowest rank is within {:.0f}% of the median rank\n",
                     (diagnose::RanksEvidence::kStragglerRatio - 1) * 100);
  return o;
}

}  // namespace

std::string run_text(const RunResult& r, const RunOptions& opt, const report::TerminalStyle& term) {
  bool color = term.color;
  const char* bold = color ? "\033[1m" : "";
  const char* dim = color ? "\033[2m" : "";
  const char* reset = color ? "\033[0m" : "";
  const auto& e = r.agent.evidence;
  std::string o;
  std::string how = r.stopped_by_steps ? fmt::format("stopped after {} steps (--steps)", opt.steps) : r.exit.describe();
  if (std::string cause = death_cause(r); !cause.empty() && e.steps > 0)
    how = fmt::format("ended after {} step{}: {}", e.steps, e.steps == 1 ? "" : "s", cause);
  else if (r.evidence.job && r.evidence.job->oom_killed())
    how = cause;  // "killed by signal 9 (Killed) by the kernel's OOM killer"
  o += fmt::format("\n{}trainscope run{}: {}  [{}, {:.1f} s]\n", bold, reset, join_cmd(r.command_shown.empty() ? redact_argv(opt.command) : r.command_shown), how, r.wall_s);

  if (r.diagnosis) {
    // The diagnosis as every report shows it (verdict first); the agent's own numbers follow.
    report::ReportInput in = report::from_evidence(r.evidence, *r.diagnosis);
    in.command = "run";
    o += "\n" + report::render_terminal(in, term);
  }

  if (e.steps > 0) {
    double step = e.step_ms;
    const char* by = e.step_source == "optimizer" ? "optimizer.step()"
                     : e.step_source == "backward"  ? "backward() (no optimizer)"
                     : e.step_source == "forward"   ? "the model's forward (no backward, no DataLoader)"
                                                    : "DataLoader fetch";
    o += r.agent.warmup_steps > 0
             ? fmt::format("\n{}Steps{} ({} by {}, medians of {} after warm-up and the profiler window):\n", bold,
                           reset, e.steps, by, std::max<int64_t>(0, e.steps - r.agent.warmup_steps))
             : fmt::format("\n{}Steps{} ({} by {}, the first step's warm-up among them):\n", bold, reset, e.steps, by);
    // The forward is timed by the model's forward hooks, which only a module call runs: a loop that
    // calls `layer.forward(x)` itself (pytorch/examples mnist_forward_forward) never shows one.
    // The phases are medians, so they need not add up; a rest over a tenth of the step is shown.
    const bool fwd_unseen = e.forward_ms <= 0 && e.backward_ms > 0;
    const double rest = step - std::max(0.0, e.data_wait_ms) - std::max(0.0, e.forward_ms) -
                        std::max(0.0, e.backward_ms) - std::max(0.0, e.optimizer_ms) - std::max(0.0, e.h2d_ms) -
                        std::max(0.0, e.io_ms);
    o += fmt::format("  step {:.2f} ms: data wait {:.2f} ms ({:.0f}%), forward {}, backward {:.2f}, "
                     "optimizer {:.2f}, H2D {:.2f}, I/O {:.2f} ms ({:.0f}%){}\n",
                     step, e.data_wait_ms, e.data_wait_pct, fwd_unseen ? std::string("not seen") : fmt::format("{:.2f}", e.forward_ms),
                     e.backward_ms, e.optimizer_ms, e.h2d_ms, e.io_ms, e.io_pct,
                     rest > 0.1 * step ? fmt::format(", the rest {:.2f} ms", rest) : std::string());
    if (fwd_unseen)
      o += "  forward not seen: no module call ran the model's forward hooks in a step (a module's forward called as "
           "`m.forward(x)` skips them, PyTorch's nn.Module docs), so its time is in the rest\n";
    // The wait's ms and % are one statistic: the mean wait and its share of the mean step. Said only
    // where there is a wait to hide: steps of uneven length alone (an RL loop's episodes) need no note.
    if (e.step_mean_ms > 0 && std::abs(e.step_mean_ms - step) > 0.1 * step && e.data_wait_ms >= 0.005)
      o += fmt::format("  data wait is the mean per step ({:.2f} ms) and its share of the mean step, {:.2f} ms: the "
                       "median step hides the steps that wait\n",
                       e.data_wait_ms, e.step_mean_ms);
    if (e.grad_accum_steps > 1)
      o += fmt::format("  gradient accumulation: {} backward() per optimizer step\n", e.grad_accum_steps);
    if (e.gpu_ms >= 0) o += fmt::format("  GPU time per step {:.2f} ms ({} of the step)\n", e.gpu_ms, pct(e.gpu_ms, step));
    if (e.sample_getitem_ms >= 0)
      o += fmt::format("  loading: {:.3f} ms per sample in __getitem__, {:.3f} ms per batch in collate{}\n",
                       e.sample_getitem_ms, std::max(0.0, e.collate_ms),
                       e.loading_cpu_share < 0 ? std::string()
                                               : fmt::format("; CPU {:.0f}% of the time it could run ({}){}", 100 * e.loading_cpu_share,
                                                             e.loading_cpu_share < diagnose::th::kLoadingWaitsCpuShare ? "it waits" : "it computes",
                                                             e.loading_run_delay_share >= 0.05
                                                                 ? fmt::format(", {:.0f}% of its wall time queued for a core held by other work",
                                                                               100 * e.loading_run_delay_share)
                                                                 : std::string()));
    if (e.h2d_copies > 0)
      o += fmt::format("  H2D copies per step: {} ({}), {} from pageable memory, {} blocking\n", e.h2d_copies,
                       human_bytes(static_cast<double>(e.h2d_bytes_per_step)), e.h2d_pageable, e.h2d_blocking);
    if (!e.mem_allocated_per_step.empty())
      o += fmt::format("  memory ({}): last {}, {} per step\n", e.mem_source == "cuda"   ? "CUDA allocated"
                       : e.mem_source == "heap" ? "C heap in use"
                                                : "process RSS",
                       human_bytes(e.mem_allocated_per_step.back()),
                       (e.mem_slope_bytes_per_step >= 0 ? "+" : "-") + human_bytes(std::abs(e.mem_slope_bytes_per_step)));
  }
  o += ranks_text(r, bold, reset);
  if (!death_cause(r).empty() && !r.stderr_tail.empty()) {
    // A failed job: its last stderr lines as it wrote them (already shown above them, in full).
    o += fmt::format("\n{}Last lines of the job's stderr{}:\n", bold, reset);
    for (const auto& l : stderr_tail_shown(r.stderr_tail)) o += "    " + l + "\n";
  }
  if (!e.optimizer.empty() || !e.loaders.empty() || !e.torch_version.empty()) {
    o += fmt::format("{}  settings: torch {}", dim, e.torch_version);
    if (!e.param_device.empty()) o += fmt::format(", params {} {}", e.param_device, e.param_dtype);
    if (!e.autocast_dtype.empty()) o += ", autocast " + e.autocast_dtype;
    if (e.compiled) o += ", torch.compile";
    // The implementation only where the class offers a choice (LBFGS and most custom ones do not).
    if (!e.optimizer.empty())
      o += e.optimizer_impl.empty() || e.optimizer_impl == "unknown" ? ", " + e.optimizer
                                                                     : fmt::format(", {} ({})", e.optimizer, e.optimizer_impl);
    for (const auto& l : e.loaders)
      o += fmt::format(", DataLoader(batch_size={}, num_workers={}, pin_memory={})", l.batch_size, l.num_workers,
                       l.pin_memory ? "True" : "False");
    o += fmt::format(", {} torch threads{}\n", e.torch_threads, reset);
  }
  if (!r.overrides.empty()) {
    o += fmt::format("\n{}Overrides{} (--set, applied at run time; your code is unchanged):\n", bold, reset);
    for (const auto& ov : r.overrides)
      o += fmt::format("  {}={}: {}{}\n", ov.key, ov.value, ov.applied ? "applied: " : "not applied: ", ov.reason);
  }
  o += host_text(r.job, &e);
  for (const auto& n : e.notes) o += fmt::format("  note: {}\n", n);
  for (const auto& n : e.agent_errors) o += fmt::format("  agent error: {}\n", n);
  for (const auto& w : r.warnings) o += fmt::format("  warning: {}\n", w);
  o += fmt::format("\n{}Output: {}/ (report.json{}{}){}\n", dim, r.out_dir, !r.rank_traces.empty() ? fmt::format(", {} per-rank traces", r.rank_traces.size())
                   : r.trace_path.empty() ? "" : ", trace.json",
                   r.samples_path.empty() ? "" : ", samples.csv", reset);
  return report::fit_lines(o, term.width);  // the step lines and settings are wider than 80 columns
}

}  // namespace ts::run
