// compute-bound: the healthy verdict. The GPU is busy >= 80% of step time (below 80%
// idle gaps leave speed on the table; sustained near 100% means the GPU sets the pace)
// and the data pipeline is not waiting (data wait < 5% when known, CPU not saturated). What is
// left: a faster GPU, more GPUs, or doing less work per sample; MFU when the agent
// knows the model's FLOPs and the device's peak is known.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/device_peaks.h"
#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> compute_bound(const Evidence& ev) {
  Util util = gpu_util(ev);
  if (util.pct < th::kComputeBoundUtilPct) return std::nullopt;
  double wait = data_wait_pct(ev);
  if (wait >= th::kDataWaitPct || cpu_saturated(ev)) return std::nullopt;
  Finding f = make("compute-bound", Bottleneck::Compute, util.source);
  add(f, "gpu_util_pct", util.pct, "%");
  if (wait >= 0) add(f, "data_wait_pct", wait, "%");
  if (ev.samples && ev.samples->sm_active_mean_pct >= 0) add(f, "sm_active_pct", ev.samples->sm_active_mean_pct, "%");
  if (ev.samples && ev.samples->tensor_active_mean_pct >= 0)
    add(f, "tensor_active_pct", ev.samples->tensor_active_mean_pct, "%");
  if (ev.trace && ev.trace->gpu.est_sm_efficiency_pct >= 0)
    add(f, "est_sm_efficiency_pct", ev.trace->gpu.est_sm_efficiency_pct, "%");
  std::string mfu_text;
  if (agent_steps(ev) && ev.agent->model_flops_per_step > 0) {
    Mfu m = model_flops_utilisation(ev.agent->model_flops_per_step, ev.agent->step_ms, device_name(ev),
                                    compute_capability(ev), !ev.agent->autocast_dtype.empty(), true,
                                    ev.agent->tf32_matmul);
    add(f, "model_flops_per_step", ev.agent->model_flops_per_step, "FLOP");
    add(f, "achieved_tflops", m.achieved_tflops, "TFLOP/s");
    if (m.mfu_pct >= 0) {
      add(f, "mfu_pct", m.mfu_pct, "%");
      mfu_text = fmt::format(" Model FLOPs utilisation is {:.0f}% ({:.0f} of {:.0f} TFLOP/s peak).", m.mfu_pct,
                             m.achieved_tflops, m.peak_tflops);
    } else {
      mfu_text = fmt::format(" The model runs {:.3g} TFLOP/s; {}.", m.achieved_tflops, m.note);
    }
  }
  f.severity = Severity::Info;
  f.confidence = util.source == "trace" ? 0.85 : 0.6;
  f.recoverable_fraction = 0;
  f.title = fmt::format("Compute-bound: the GPU is busy {:.0f}% of the time", util.pct);
  f.gain = "the GPU is the bottleneck: the rest of the pipeline keeps up";
  f.explanation =
      "The GPU runs kernels nearly all the time and the input pipeline keeps up: this is the healthy "
      "state (a large model on simple data: the GPU sets the pace). \"Busy\" still only means a kernel was running; the findings "
      "below say whether those kernels use the hardware well (precision, shapes, fusion)." + mfu_text;
  f.fix = "To go faster: make each kernel cheaper (bf16 autocast, torch.compile, fused attention), "
          "or add hardware: a faster GPU, or more GPUs with DistributedDataParallel.";
  f.fix_code =
      "# more GPUs: torchrun --nproc_per_node=NGPU train.py  (DistributedDataParallel)\n"
      "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
      "    loss = loss_fn(model(xb), yb)";
  return f;
}

}  // namespace ts::diagnose::rules
