// fp32-gemm: matrix multiplies and convolutions in fp32 on a GPU with Tensor Cores (Tensor Cores
// sit idle; TB plugin: cc >= 7.0 and no
// Tensor Core kernels -> AMP; PyTorch's pattern matcher: fp32 matmul on sm80+ with TF32 off).
// Evidence, any of: the trace's GEMM/conv kernels >= 50% fp32 by time and >= 10% of kernel
// time on cc >= 7.0; the lab's bf16 run >= 20% faster than fp32; the agent seeing fp32
// parameters on a CUDA device with no autocast.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {
namespace {

// AMD devices report gfx versions (MI250: 9.0) as compute capability: not comparable to CUDA's.
bool is_amd(const std::string& name) {
  return name.find("AMD") != std::string::npos || name.find("Radeon") != std::string::npos ||
         name.find("Instinct") != std::string::npos;
}

}  // namespace

std::optional<Finding> fp32_gemm(const Evidence& ev) {
  int cc = compute_capability(ev);
  Finding f;
  double lab_fp32 = ev.lab ? lab_rate(*ev.lab, "fp32") : -1, lab_bf16 = ev.lab ? lab_rate(*ev.lab, "bf16") : -1;
  bool lab_says = lab_fp32 > 0 && lab_bf16 > 0;
  const auto* t = trace_with_steps(ev);
  if (lab_says) {
    double gain = lab_bf16 / lab_fp32 - 1;
    // Below 20% the bottleneck is not precision.
    if (gain < th::kLabAmpGain) return std::nullopt;
    f = make("fp32-gemm", Bottleneck::Compute, "lab");
    add(f, "fp32_samples_per_s", lab_fp32, "samples/s");
    add(f, "bf16_samples_per_s", lab_bf16, "samples/s");
    add(f, "amp_gain_pct", 100 * gain, "%");
    f.recoverable_fraction = std::clamp(1 - lab_fp32 / lab_bf16, 0.0, 0.9);
    f.confidence = 0.95;
    f.title = fmt::format("fp32 on Tensor Core hardware: bf16 autocast measured {:.0f}% faster", 100 * gain);
  } else if (t && cc >= 70 && !is_amd(t->device_name) && t->precision.gemm_time_ns > 0 && t->kernels.total_ns > 0) {
    const auto& p = t->precision;
    double gemm_share = 100.0 * p.gemm_time_ns / t->kernels.total_ns;
    if (p.fp32_share_pct < th::kFp32ShareOfGemmPct || gemm_share < th::kGemmShareOfKernelPct) return std::nullopt;
    f = make("fp32-gemm", Bottleneck::Compute, "trace");
    double fp32_ns = p.fp32_share_pct / 100.0 * p.gemm_time_ns;
    add(f, "fp32_share_of_gemm_pct", p.fp32_share_pct, "%");
    add(f, "gemm_share_of_kernel_pct", gemm_share, "%");
    add(f, "tensor_core_share_pct", p.tensor_core_share_pct, "%");
    add(f, "fp32_gemm_ms", fp32_ns / 1e6, "ms");
    add(f, "compute_capability", cc / 10.0, "");
    f.recoverable_fraction = std::clamp(fp32_ns * (1 - 1 / th::kAmpGemmSpeedup) / t->steps.total_ns, 0.0, 0.9);
    if (f.recoverable_fraction < th::kFp32MinRecoverable) return std::nullopt;
    f.confidence = 0.8;
    f.title = fmt::format("fp32 GEMMs on Tensor Core hardware: {:.0f}% of matmul/conv time in fp32", p.fp32_share_pct);
  } else if (ev.agent && ev.agent->cuda_available && ev.agent->param_device.rfind("cuda", 0) == 0 &&
             ev.agent->param_dtype == "torch.float32" && ev.agent->autocast_dtype.empty() && cc >= 70) {
    f = make("fp32-gemm", Bottleneck::Compute, "agent");
    add(f, "compute_capability", cc / 10.0, "");
    add(f, "autocast", 0, "bool");
    // TF32 matmuls (allow_tf32, or set_float32_matmul_precision("high"/"medium")) already use the
    // Tensor Cores on cc >= 8.0: bf16 still doubles their rate, so the estimate is halved.
    bool tf32 = cc >= 80 && (ev.agent->tf32_matmul == 1 || ev.agent->float32_matmul_precision == "high" ||
                             ev.agent->float32_matmul_precision == "medium");
    if (ev.agent->tf32_matmul >= 0) add(f, "tf32_matmul", tf32 ? 1 : 0, "bool");
    // No measurement of the GEMM share: a modest estimate, low confidence.
    f.recoverable_fraction = tf32 ? th::kAgentTf32Recoverable : th::kAgentFp32Recoverable;
    // bf16 shortens only the GPU's busy time: with the GPU busy u of the step, at most
    // u x (1 - 1 / kAmpGemmSpeedup) comes back (a GPU idle 90% of the step gains at most 5%).
    if (Util u = gpu_util(ev); u.pct >= 0) {
      add(f, "gpu_util_pct", u.pct, "%");
      f.recoverable_fraction = std::min(f.recoverable_fraction, u.pct / 100 * (1 - 1 / th::kAmpGemmSpeedup));
      if (f.recoverable_fraction < th::kFp32MinRecoverable) return std::nullopt;
    }
    f.confidence = 0.5;
    f.title = tf32 ? "fp32 training with TF32 matmuls: no autocast seen (bf16 doubles the Tensor Core rate)"
                   : "fp32 training on Tensor Core hardware: no autocast seen";
  } else {
    return std::nullopt;
  }
  f.severity = severity_for(f.recoverable_fraction);
  f.gain = fmt::format("Tensor Cores run bf16/fp16 matmuls several times faster than fp32: {}", gain_text(f.recoverable_fraction));
  bool bf16 = cc >= 80 || (cc == 0 && f.source == "lab");
  auto ver = torch_version(ev.agent ? ev.agent->torch_version : "");
  bool new_scaler = ver.first > 2 || (ver.first == 2 && ver.second >= 3);
  f.explanation =
      "The GPU's Tensor Cores multiply bf16/fp16 (and tf32) matrices at many times the fp32 rate, "
      "but the matrix multiplies and convolutions here run as plain fp32 kernels. Mixed precision "
      "(autocast) runs them in half precision while keeping the weights and the optimizer in fp32.";
  bool tf32_on = ev.agent && (ev.agent->tf32_matmul == 1 || ev.agent->float32_matmul_precision == "high" ||
                              ev.agent->float32_matmul_precision == "medium");
  if (bf16) {
    f.explanation += " On this GPU (compute capability >= 8.0) use bfloat16: it has fp32's exponent "
                     "range, so no GradScaler is needed.";
    f.explanation += tf32_on ? " TF32 is already on here (matmuls use the Tensor Cores at half the bf16 rate)."
                             : " Setting TF32 on is a smaller, one-line alternative (it is off here: PyTorch's "
                               "default for matmuls since 1.12).";
    f.fix = "Wrap the forward pass and the loss in torch.autocast(\"cuda\", dtype=torch.bfloat16); no GradScaler with bf16.";
    f.fix_code =
        "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
        "    loss = loss_fn(model(xb), yb)\n"
        "loss.backward()" +
        std::string(tf32_on ? "" : "\n# smaller step, one line: torch.set_float32_matmul_precision(\"high\")  # TF32");
    f.fix_settings = {{"autocast", "bf16"}};  // fp16 needs a GradScaler in the loop: a code change
  } else {
    f.explanation += " This GPU (compute capability 7.x) has fp16 Tensor Cores but no bf16: use "
                     "fp16 autocast with a GradScaler, which keeps small gradients from underflowing.";
    f.fix = "fp16 autocast with a GradScaler (fp16 needs one; bf16 would not).";
    f.fix_code = fmt::format(
        "scaler = {}\n"
        "with torch.autocast(\"cuda\", dtype=torch.float16):\n"
        "    loss = loss_fn(model(xb), yb)\n"
        "scaler.scale(loss).backward()\n"
        "scaler.step(opt)\n"
        "scaler.update()",
        new_scaler ? "torch.amp.GradScaler(\"cuda\")" : "torch.cuda.amp.GradScaler()");
  }
  point_at_fix(f, ev, "forward", "the forward pass to run under torch.autocast", KnobFix{{{"bf16", "True"}}, ""},
               KnobFix{{{"precision", "\"bf16-mixed\""}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
