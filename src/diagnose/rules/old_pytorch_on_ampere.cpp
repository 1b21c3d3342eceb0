// old-pytorch-on-ampere: a PyTorch older than 2.0 on an Ampere-or-newer GPU . 2.x adds
// torch.compile, fused optimizers and fused attention (SDPA/FlashAttention).
// Evidence: the agent's torch version and compute capability >= 8.0; or a trace in the 2021
// profiler format (PyTorch 1.8-1.9) recorded on a cc >= 8.0 device.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> old_pytorch_on_ampere(const Evidence& ev) {
  int cc = compute_capability(ev);
  if (cc < 80) return std::nullopt;
  Finding f;
  std::string version;
  if (ev.agent && !ev.agent->torch_version.empty()) {
    auto v = torch_version(ev.agent->torch_version);
    if (v.first == 0 || v.first >= 2) return std::nullopt;
    f = make("old-pytorch-on-ampere", Bottleneck::Config, "agent");
    version = ev.agent->torch_version;
    add(f, "torch_major", v.first, "");
    add(f, "torch_minor", v.second, "");
    f.confidence = 0.9;
  } else if (ev.trace && ev.trace->format == trace::TraceFormat::Kineto2021) {
    f = make("old-pytorch-on-ampere", Bottleneck::Config, "trace");
    version = "1.8-1.9 (2021 trace format)";
    f.confidence = 0.6;
  } else {
    return std::nullopt;
  }
  add(f, "compute_capability", cc / 10.0, "");
  // The upgrade is no speed-up by itself: it enables fixes (torch.compile, fused optimizers, flash
  // SDPA) whose gains their own findings size. No time is claimed here.
  f.recoverable_fraction = 0;
  f.severity = Severity::Low;
  f.title = fmt::format("Old PyTorch ({}) on an Ampere-or-newer GPU (cc {:.1f})", version, cc / 10.0);
  f.gain = "none by itself: PyTorch 2.x enables torch.compile, fused optimizers and FlashAttention, whose gains their own findings size";
  f.explanation =
      "This PyTorch predates 2.0. On Ampere and newer GPUs the 2.x releases bring torch.compile, "
      "fused AdamW/Adam, scaled_dot_product_attention with FlashAttention kernels and newer "
      "cuDNN/cuBLAS builds with better kernels for these architectures.";
  f.fix = "Upgrade to a current PyTorch 2.x built for your CUDA driver.";
  f.fix_code = "pip install -U torch torchvision --index-url https://download.pytorch.org/whl/cu121";
  return f;
}

}  // namespace ts::diagnose::rules
