// Classification (docs/FINDINGS.md "Scenarios"):
//   not-on-gpu finding (confidence >= 0.7) -> NotOnGpu (a GPU is there and idle: a fault)
//   no CUDA in the process, or a trace with no GPU activity -> CpuOnly (nothing to move)
//   "complex data" = data wait >= 5% of the step, or CPU saturated, or sawtooth GPU samples
//   simple data:  GPU >= 50% -> 3 large model (GPU-bound; healthy from 80%), else 1 small model
//   complex data: GPU <  50% -> 2 small model (CPU preprocessing bound), else 4 both stressed
#include "diagnose/scenario.h"

#include <fmt/format.h>

#include "diagnose/rules/rule.h"

namespace ts::diagnose {

ScenarioResult classify(const Evidence& ev, const std::vector<Finding>& findings) {
  for (const auto& f : findings)
    if (f.id == "not-on-gpu" && f.confidence >= 0.7) return {Scenario::NotOnGpu, f.title};
  if (rules::agent_without_cuda(ev) && ev.agent->steps > 0)
    return {Scenario::CpuOnly, "no CUDA device in this process: a CPU-only run, nothing to move to a GPU here"};
  if (ev.trace && !ev.trace->gpu.present && ev.trace->steps.total_ns > 0)
    return {Scenario::CpuOnly, "the trace has no GPU activity: every operation ran on the CPU"};
  rules::Util u = rules::gpu_util(ev);
  if (u.pct < 0) return {Scenario::Unknown, "no GPU utilisation in the evidence (no GPU events, no GPU samples)"};
  double wait = rules::data_wait_pct(ev);
  double cpu = rules::cpu_busy_pct_of_budget(ev);
  bool saturated = rules::cpu_saturated(ev);
  bool sawtooth = ev.samples && ev.samples->gpu_pattern == "sawtooth";
  bool complex = wait >= th::kDataWaitPct || saturated || sawtooth;
  std::string nums = fmt::format("GPU busy {:.0f}% ({})", u.pct, u.source);
  if (wait >= 0) nums += fmt::format(", data wait {:.0f}% of the step", wait);
  if (cpu >= 0) nums += fmt::format(", CPU {:.0f}% of the usable cores", cpu);
  if (sawtooth) nums += ", GPU utilisation sawtooth";
  if (!complex) {
    if (u.pct >= th::kBatchGpuUtilPct)
      return {Scenario::LargeModelSimpleData,
              nums + (u.pct >= th::kComputeBoundUtilPct ? ": the GPU does the work and the input keeps up"
                                                        : ": the input keeps up; the GPU is the main cost but not yet saturated")};
    return {Scenario::SmallModelSimpleData,
            nums + ": the input keeps up but each step gives the GPU little work"};
  }
  if (u.pct < th::kBatchGpuUtilPct)
    return {Scenario::SmallModelComplexData, nums + ": the GPU finishes quickly and waits for the CPU to prepare data"};
  return {Scenario::LargeModelComplexData, nums + ": the GPU is busy and the data pipeline still holds it back"};
}

}  // namespace ts::diagnose
