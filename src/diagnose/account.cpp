#include "diagnose/account.h"

#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose {

StepAccount step_account(const Evidence& ev) {
  StepAccount a;
  // The mean step: the rules' shares are ratios of totals (the trace's classes over its steps'
  // total, the agent's waits over the steady steps' total), so their milliseconds are of the mean
  // step. The median only where the mean is unknown.
  if (const auto* ag = rules::agent_steps(ev)) {
    a.step_ms = ag->step_mean_ms > 0 ? ag->step_mean_ms : ag->step_ms;
  } else if (const auto* t = rules::trace_with_steps(ev)) {
    a.step_ms = t->steps.steps.empty() ? t->steps.total_ns / 1e6 : t->steps.total_ns / 1e6 / t->steps.steps.size();
  }
  // The GPU's idle share: the trace's kernel union in the steps, else NVML's sampled mean. A run
  // without a GPU (or a trace without GPU events) has no idle pool: the step is the only bound.
  const bool no_gpu = rules::agent_without_cuda(ev) || (ev.trace && !ev.trace->gpu.present);
  if (rules::Util u = rules::gpu_util(ev); u.pct >= 0 && !no_gpu) a.idle_share = std::clamp(1 - u.pct / 100, 0.0, 1.0);
  return a;
}

ClaimPool claim_pool(const std::string& id) {
  // Faster kernels shorten only the GPU's busy time.
  if (id == "fp32-gemm" || id == "tensor-core-shapes" || id == "gpu-throttling" || id == "few-ops-dominate" ||
      id == "compute-bound")
    return ClaimPool::Busy;
  // Host work the GPU waits for: its fix gives back GPU idle time.
  if (id == "host-sync" || id == "unfused-optimizer" || id == "in-loop-io" || id == "dataloader-starvation" ||
      id == "cpu-bound-transforms" || id == "pageable-memcpy" || id == "openblas-on-intel" || id == "data-parallel" ||
      id == "anomaly-detection" ||
      generic_rank(id) >= 0)
    return ClaimPool::Idle;
  return ClaimPool::Step;  // communication, stragglers, threads: the step as a whole
}

int generic_rank(const std::string& id) {
  if (id == "gpu-idle") return 0;       // a cause no specific rule sized
  if (id == "launch-bound") return 1;   // launches and framework code between them
  if (id == "batch-too-small") return 2;  // whatever per-step overhead is left
  return -1;
}

bool spread_through_step(const std::string& id) { return id == "page-fault-churn"; }

namespace {

// Settling order: specific causes, then costs spread through the step, then the generic readings.
int settle_rank(const std::string& id) {
  if (generic_rank(id) >= 0) return 2 + generic_rank(id);
  return spread_through_step(id) ? 1 : 0;
}

// "... gives up to 1.7x" -> "... gives up to 1.2x": the rule's own wording with the settled gain.
void restate_gain(Finding& f, double own, double claim) {
  const std::string before = gain_text(own), after = gain_text(claim);
  if (f.gain.size() >= before.size() && f.gain.compare(f.gain.size() - before.size(), before.size(), before) == 0)
    f.gain.replace(f.gain.size() - before.size(), before.size(), after);
  else
    f.gain += fmt::format("; in the step's account {}", after);
}

std::string list_ids(const std::vector<std::string>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? (i + 1 == ids.size() ? " and " : ", ") : "") + ids[i];
  return s;
}

}  // namespace

void settle(std::vector<Finding>& fs, const StepAccount& acc) {
  std::vector<Finding*> order;
  for (auto& f : fs)
    if (!f.outside_step) order.push_back(&f);  // time outside the step is on the run's scale only
  // Specific causes first, largest claim first; then the generic readings in their fixed order.
  std::stable_sort(order.begin(), order.end(), [](const Finding* a, const Finding* b) {
    const int ra = settle_rank(a->id), rb = settle_rank(b->id);
    if (ra != rb) return ra < rb;
    return a->recoverable_fraction > b->recoverable_fraction;
  });
  const bool gpu = acc.idle_share >= 0;
  double step_left = 1, idle_left = gpu ? acc.idle_share : 1, busy_left = gpu ? 1 - acc.idle_share : 1;
  std::vector<std::string> idle_claimants;  // ids holding idle time, for the generic texts
  std::vector<std::string> claimants;       // ids holding any of the step, for the spread costs' texts
  for (Finding* f : order) {
    const double own = std::max(0.0, f->recoverable_fraction);
    f->own_fraction = own;
    const ClaimPool pool = claim_pool(f->id);
    double& left = pool == ClaimPool::Idle ? idle_left : pool == ClaimPool::Busy ? busy_left : step_left;
    double claim = std::min({own, left, step_left});
    // Its share of what the fixes before it leave: together 1 - (1 - a)(1 - b), never a twice.
    const bool spread = spread_through_step(f->id) && !claimants.empty();
    if (spread) claim = std::min(own * step_left, left);
    // batch-too-small: a batch twice as large pays the per-step overhead still left (the idle time
    // no other finding claims) once per two batches: per sample, like removing half of it from
    // every step. That is its gain on the step scale, and never more than the rule's own estimate.
    double overhead_left = idle_left;
    if (f->id == "batch-too-small") claim = std::min(own, 0.5 * std::min(idle_left, step_left));
    claim = std::max(0.0, claim);
    const bool reduced = claim < own - 1e-9;
    f->recoverable_fraction = claim;
    if (acc.step_ms > 0) {
      f->step_ms = acc.step_ms;
      f->claimed_ms = claim * acc.step_ms;
    }
    if (f->id == "batch-too-small") {
      const std::string after = idle_claimants.empty() ? "" : " after " + list_ids(idle_claimants);
      f->gain = acc.step_ms > 0
                    ? fmt::format("a batch twice as large pays the per-step overhead left{} ({:.1f} ms) once per two "
                                  "batches: per sample like removing {:.1f} ms of each step, {} per sample",
                                  after, overhead_left * acc.step_ms, f->claimed_ms, gain_text(claim))
                    : fmt::format("a batch twice as large pays the per-step overhead left{} ({:.0f}% of the step) once "
                                  "per two batches: {} per sample",
                                  after, 100 * overhead_left, gain_text(claim));
    } else if (reduced && spread) {
      restate_gain(*f, own, claim);
      f->gain += fmt::format(" (its share of the {:.0f}% of the step that the fix{} of {} leave{})", 100 * step_left,
                             claimants.size() == 1 ? "" : "es", list_ids(claimants), claimants.size() == 1 ? "s" : "");
    } else if (reduced) {
      restate_gain(*f, own, claim);
      if (generic_rank(f->id) >= 0 && !idle_claimants.empty())
        f->gain += fmt::format(" (what is left after {})", list_ids(idle_claimants));
      else
        f->gain += fmt::format(" (the rule alone sized {:.0f}% of the step; the rest is claimed by other findings)", 100 * own);
    }
    if (f->claimed_ms > 0 && f->id != "batch-too-small" && f->gain.find(" ms") == std::string::npos)
      f->gain += fmt::format(" ({:.1f} of {:.1f} ms per step)", f->claimed_ms, acc.step_ms);
    if (reduced && f->severity != Severity::Critical && f->id != "memory-growth")
      f->severity = std::min(f->severity, rules::severity_for(claim));
    left -= claim;
    if (&left != &step_left) step_left -= claim;
    if (pool == ClaimPool::Idle && claim > 0) idle_claimants.push_back(f->id);
    if (claim > 0) claimants.push_back(f->id);
  }
}

}  // namespace ts::diagnose
