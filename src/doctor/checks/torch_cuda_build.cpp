// torch-cuda-build: was PyTorch built with CUDA, and does the driver support that CUDA?
// A CPU wheel on a GPU machine trains on the CPU without a word; a wheel built for a newer
// CUDA major than the driver supports cannot start CUDA at all.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_torch_cuda_build(const DoctorFacts& f) {
  Check c = make_check("torch-cuda-build", "PyTorch built with CUDA");
  const auto& p = f.python;
  const auto& nv = f.nvidia;
  if (!p.has_torch || (f.inspecting_pid && p.torch_version.empty())) {
    c.status = Status::skip;
    c.summary = "no PyTorch to look at";
    return c;
  }
  c.add("torch", p.torch_version);
  c.add("torch CUDA", p.torch_cuda.empty() ? "none (CPU build)" : p.torch_cuda);
  c.add("driver CUDA", cuda_version_text(nv.cuda_driver_version));
  const bool gpus_here = nv.driver_found && !nv.gpus.empty();
  if (p.torch_cuda.empty()) {
    if (gpus_here) {
      c.status = Status::fail;
      c.summary = fmt::format("torch {} is a CPU-only build, but {} NVIDIA GPU{} are here", p.torch_version,
                              nv.gpus.size(), nv.gpus.size() == 1 ? "" : "s");
      c.fix = fmt::format("Install a CUDA build, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu{}",
                          nv.cuda_driver_version >= 12040 ? "124" : nv.cuda_driver_version >= 12010 ? "121" : "118");
      return c;
    }
    c.status = Status::pass;
    c.summary = "torch " + p.torch_version + " is a CPU build, and there is no NVIDIA GPU here";
    return c;
  }
  auto built = parse_version(p.torch_cuda);
  if (nv.cuda_driver_version > 0 && built[0] > 0) {
    int drv_major = nv.cuda_driver_version / 1000, drv_minor = (nv.cuda_driver_version % 1000) / 10;
    if (built[0] > drv_major) {
      c.status = Status::fail;
      c.summary = fmt::format("torch was built for CUDA {}, the driver supports only up to CUDA {}", p.torch_cuda,
                              cuda_version_text(nv.cuda_driver_version));
      c.fix = fmt::format("Update the NVIDIA driver (CUDA {}.x needs a newer branch), or install a torch wheel "
                          "built for CUDA {}.x.", built[0], drv_major);
      return c;
    }
    if (built[0] == drv_major && built[1] > drv_minor) {
      c.status = Status::warn;
      c.summary = fmt::format("torch was built for CUDA {}, newer than the driver's CUDA {}: minor-version "
                              "compatibility runs it, but PTX JIT and newer runtime features may fail",
                              p.torch_cuda, cuda_version_text(nv.cuda_driver_version));
      c.fix = "Update the NVIDIA driver to one that supports CUDA " + p.torch_cuda + ".";
      return c;
    }
  }
  c.status = Status::pass;
  c.summary = "torch " + p.torch_version + " built with CUDA " + p.torch_cuda +
              (nv.cuda_driver_version > 0 ? ", driver supports CUDA " + cuda_version_text(nv.cuda_driver_version) : "");
  return c;
}

}  // namespace ts::doctor
