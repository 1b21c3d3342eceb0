// torch-gpu-generation: an old PyTorch on Ampere (sm_80) or newer GPUs (2.0 added torch.compile,
// fused optimizers and flash attention). Fails when the build has no
// kernels for the GPU at all (torch.cuda.get_arch_list() lacks a compatible sm_ or compute_).
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {
namespace {

// A cubin for sm_XY runs on sm_XZ with Z >= Y (same major); PTX compute_XY JITs to anything newer.
bool build_supports(const std::vector<std::string>& archs, int major, int minor) {
  for (const auto& a : archs) {
    auto us = a.find('_');
    if (us == std::string::npos || a.size() < us + 3) continue;
    int m = a[us + 1] - '0';
    int n = std::atoi(a.c_str() + us + 2);
    std::string kind = a.substr(0, us);
    if (kind == "sm" && m == major && n <= minor) return true;
    if (kind == "compute" && (m < major || (m == major && n <= minor))) return true;
  }
  return false;
}

const char* generation(int major, int minor) {
  if (major >= 10) return "Blackwell";
  if (major == 9) return "Hopper";
  if (major == 8 && minor >= 9) return "Ada";
  if (major == 8) return "Ampere";
  if (major == 7 && minor >= 5) return "Turing";
  if (major == 7) return "Volta";
  return "pre-Volta";
}

}  // namespace

Check check_torch_gpu_generation(const DoctorFacts& f) {
  Check c = make_check("torch-gpu-generation", "PyTorch new enough for the GPU");
  const auto& p = f.python;
  // Compute capability: NVML first, the probe's torch devices otherwise.
  int major = -1, minor = -1;
  std::string name;
  for (const auto& g : f.nvidia.gpus)
    if (g.cc_major > major || (g.cc_major == major && g.cc_minor > minor)) major = g.cc_major, minor = g.cc_minor, name = g.name;
  for (const auto& d : p.devices)
    if (d.major > major || (d.major == major && d.minor > minor)) major = d.major, minor = d.minor, name = d.name;
  if (major < 0) {
    c.status = Status::skip;
    c.summary = "no GPU compute capability known (no NVIDIA GPU, or an old driver)";
    return c;
  }
  if (p.torch_version.empty()) {
    c.status = Status::skip;
    c.summary = "no PyTorch to compare with the GPU";
    return c;
  }
  c.add("GPU", fmt::format("{} (sm_{}{}, {})", name, major, minor, generation(major, minor)));
  c.add("torch", p.torch_version);
  if (!p.arch_list.empty()) {
    std::string list;
    for (const auto& a : p.arch_list) list += (list.empty() ? "" : " ") + a;
    c.add("torch.cuda.get_arch_list()", list);
    if (!build_supports(p.arch_list, major, minor)) {
      c.status = Status::fail;
      c.summary = fmt::format("torch {} has no kernels for sm_{}{} ({}): CUDA calls fail with "
                              "'no kernel image is available'", p.torch_version, major, minor, name);
      c.fix = "Install a torch build that lists sm_" + std::to_string(major * 10 + minor) +
              " (current wheels from https://download.pytorch.org/whl/ do).";
      return c;
    }
  }
  if (major >= 8 && version_less(p.torch_version, 2, 0)) {
    c.status = Status::warn;
    c.summary = fmt::format("torch {} on an {} GPU: no torch.compile, no fused AdamW, no flash-attention "
                            "SDPA; an upgrade is often a large speedup on sm_80+", p.torch_version,
                            generation(major, minor));
    c.fix = "pip install --upgrade torch (2.x), then enable bf16 autocast and torch.compile.";
    return c;
  }
  if (major >= 9 && version_less(p.torch_version, 2, 1)) {
    c.status = Status::warn;
    c.summary = fmt::format("torch {} on Hopper: FP8 and the Hopper-tuned kernels (FlashAttention-2 in SDPA, "
                            "cuBLASLt heuristics) came with 2.1+", p.torch_version);
    c.fix = "pip install --upgrade torch";
    return c;
  }
  c.status = Status::pass;
  c.summary = fmt::format("torch {} supports {} sm_{}{}", p.torch_version, generation(major, minor), major, minor);
  return c;
}

}  // namespace ts::doctor
