// not-on-gpu: CUDA is there but the work runs on the CPU (nvidia-smi shows ~0%
// utilisation: the code is not using the GPU). Evidence, any of: the agent saw CUDA available and
// the model's parameters on the CPU; the samples show a GPU below 5% while the job's CPU is
// busy; the trace has no GPU activity at all (confident only when it lists a CUDA device).
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> not_on_gpu(const Evidence& ev) {
  Finding f;
  if (ev.agent && ev.agent->cuda_available && ev.agent->param_device.rfind("cpu", 0) == 0) {
    f = make("not-on-gpu", Bottleneck::Config, "agent");
    f.confidence = 0.95;
    add(f, "cuda_available", 1, "bool");
    add(f, "params_on_cpu", 1, "bool");
    f.title = fmt::format("Not using the GPU: CUDA is available ({}) but the model is on the CPU",
                          ev.agent->device_name.empty() ? "a CUDA device" : ev.agent->device_name);
  } else if (ev.samples && ev.samples->nvml && ev.samples->gpus > 0 && ev.samples->gpu_util_mean_pct >= 0 &&
             ev.samples->gpu_util_mean_pct < th::kNotOnGpuUtilPct && ev.samples->process_tree_cpu_mean_pct >= th::kNotOnGpuBusyCpuPct &&
             !(ev.trace && ev.trace->gpu.present)) {
    f = make("not-on-gpu", Bottleneck::Config, "samples");
    f.confidence = 0.7;
    add(f, "gpu_util_mean_pct", ev.samples->gpu_util_mean_pct, "%");
    add(f, "process_cpu_mean_pct", ev.samples->process_tree_cpu_mean_pct, "%");
    f.title = fmt::format("Not using the GPU: {:.0f}% GPU utilisation while the job keeps the CPU busy",
                          ev.samples->gpu_util_mean_pct);
  } else if (ev.trace && !ev.trace->gpu.present && ev.trace->steps.total_ns > 0 &&
             !agent_without_cuda(ev)) {
    // A CPU-only trace from a process that had no CUDA at all is CPU-only by necessity.
    f = make("not-on-gpu", Bottleneck::Config, "trace");
    bool has_device = !ev.trace->device_name.empty();
    f.confidence = has_device ? 0.8 : 0.4;
    add(f, "gpu_events", 0, "count");
    add(f, "cpu_time_ms", ev.trace->steps.total_ns / 1e6, "ms");
    f.title = has_device ? fmt::format("Not using the GPU: the trace lists {} but no GPU work ran", ev.trace->device_name)
                         : std::string("Not using the GPU: the trace has no GPU activity at all");
  } else {
    return std::nullopt;
  }
  // A GPU runs these workloads typically 10x or more faster than a CPU.
  f.recoverable_fraction = 0.9 * f.confidence;
  f.severity = f.confidence >= 0.7 ? Severity::Critical : Severity::Medium;
  f.gain = "training on the GPU is typically 10x or more faster than on the CPU";
  f.explanation =
      "Every operation ran on the CPU. Tensors and modules stay on the CPU unless moved: a model "
      "created without .cuda()/.to(device), a device variable that fell back to \"cpu\", or "
      "inputs moved but not the model (or the reverse) all leave the GPU idle. If this machine has "
      "no usable GPU, the trace is still CPU-only by design and this finding does not apply.";
  f.fix = "Pick the device once and move both the model and every batch to it.";
  f.fix_code =
      "device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
      "model = model.to(device)\n"
      "for xb, yb in loader:\n"
      "    xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)";
  point_at(f, ev, "forward", "the model runs here: move it and its inputs to the GPU");
  return f;
}

}  // namespace ts::diagnose::rules
