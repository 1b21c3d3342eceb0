// cuda-usable: does a real CUDA operation work from the target Python? The probe runs a
// matmul on cuda:0 and synchronises, so "is_available() is True but the first kernel fails"
// (no kernel image for this GPU, out of memory, driver mismatch) is caught here.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_cuda_usable(const DoctorFacts& f) {
  Check c = make_check("cuda-usable", "CUDA usable from Python");
  const auto& p = f.python;
  const auto& nv = f.nvidia;
  const bool gpus_here = nv.driver_found && !nv.gpus.empty();
  if (f.inspecting_pid) {
    c.status = Status::skip;
    c.summary = "not probed for a running job (run trainscope doctor without --pid to probe)";
    return c;
  }
  if (!p.has_torch) {
    c.status = Status::skip;
    c.summary = "no PyTorch to try";
    return c;
  }
  if (p.torch_cuda.empty() && !gpus_here) {
    c.status = Status::skip;
    c.summary = "CPU build of PyTorch and no NVIDIA GPU: nothing to try";
    return c;
  }
  auto env = f.process.env.find("CUDA_VISIBLE_DEVICES");
  if (env != f.process.env.end()) c.add("CUDA_VISIBLE_DEVICES", env->second.empty() ? "(empty)" : env->second);
  c.add("torch.cuda.is_available()", p.cuda_available == 1 ? "True" : p.cuda_available == 0 ? "False" : "unknown");
  if (p.cuda_available != 1) {
    c.status = Status::fail;
    c.summary = "torch.cuda.is_available() is False";
    if (p.torch_cuda.empty()) c.fix = "This torch is a CPU build: install a CUDA build (see torch-cuda-build).";
    else if (!gpus_here) c.fix = "No GPU is visible: check the driver (nvidia-smi), the container's --gpus flag.";
    else if (env != f.process.env.end()) c.fix = "CUDA_VISIBLE_DEVICES hides the GPUs: unset it or list valid indices.";
    else c.fix = "The driver sees GPUs but CUDA does not start: compare torch's CUDA with the driver's (torch-cuda-build).";
    return c;
  }
  c.add("devices visible to torch", std::to_string(p.cuda_device_count));
  for (size_t i = 0; i < p.devices.size(); ++i)
    c.add(fmt::format("cuda:{}", i), fmt::format("{} (sm_{}{})", p.devices[i].name, p.devices[i].major, p.devices[i].minor));
  if (!p.cuda_probe_ok) {
    c.status = Status::fail;
    c.summary = "a matmul on cuda:0 failed: " + (p.cuda_error.empty() ? std::string("no error text") : p.cuda_error);
    c.fix = p.cuda_error.find("no kernel image") != std::string::npos
                ? "This torch build has no kernels for this GPU: install a newer torch (see torch-gpu-generation)."
            : p.cuda_error.find("out of memory") != std::string::npos
                ? "The GPU is full: see gpu-busy for the processes holding its memory."
                : "Run python -c 'import torch; torch.ones(1, device=\"cuda\")' to see the full error.";
    return c;
  }
  if (gpus_here && p.cuda_device_count >= 0 && p.cuda_device_count < static_cast<int>(nv.gpus.size()) &&
      env == f.process.env.end()) {
    c.status = Status::warn;
    c.summary = fmt::format("CUDA works, but torch sees {} of the {} GPUs the driver lists", p.cuda_device_count,
                            nv.gpus.size());
    c.fix = "Check NVIDIA_VISIBLE_DEVICES / the container's device list.";
    return c;
  }
  c.status = Status::pass;
  c.summary = fmt::format("a matmul on cuda:0 ran and synchronised; {} device{} visible", p.cuda_device_count,
                          p.cuda_device_count == 1 ? "" : "s");
  return c;
}

}  // namespace ts::doctor
