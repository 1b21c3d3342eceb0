// nvidia-driver: is there an NVIDIA driver, and which GPUs does it show?
// No driver is a warn, not a failure: CPU-only machines are legitimate, but a user who
// expected GPUs needs to hear it before a run silently trains on the CPU.
#include <fmt/format.h>

#include <map>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_nvidia_driver(const DoctorFacts& f) {
  Check c = make_check("nvidia-driver", "NVIDIA driver and GPUs");
  const auto& nv = f.nvidia;
  if (!nv.driver_found) {
    c.status = Status::warn;
    c.summary = nv.error.rfind("no NVIDIA driver", 0) == 0 ? nv.error
                : "no NVIDIA driver found" + (nv.error.empty() ? std::string() : " (" + nv.error + ")");
    c.fix = "If this machine should have GPUs: install the NVIDIA driver (nvidia-smi must work); in a container, "
            "start it with --gpus all (NVIDIA Container Toolkit). Otherwise training runs on the CPU.";
    return c;
  }
  c.add("driver", nv.driver_version.empty() ? "unknown" : nv.driver_version);
  c.add("CUDA supported by the driver", cuda_version_text(nv.cuda_driver_version));
  c.add("GPUs", std::to_string(nv.gpus.size()));
  std::map<std::string, int> models;
  int lost = 0;
  for (const auto& g : nv.gpus) {
    ++models[g.name];
    if (g.lost) ++lost;
    c.add(fmt::format("GPU {}", g.index), fmt::format("{} {} {}", g.name, g.uuid, g.pci_bus_id));
  }
  if (nv.gpus.empty()) {
    c.status = Status::warn;
    c.summary = "NVIDIA driver " + nv.driver_version + " loaded, but it shows no GPU";
    c.fix = "Check CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES and the container's --gpus flag.";
    return c;
  }
  if (lost > 0) {
    c.status = Status::fail;
    c.summary = fmt::format("{} of {} GPUs are lost (GPU_IS_LOST)", lost, nv.gpus.size());
    c.fix = "The GPU fell off the bus: check the kernel log for Xid 79, reseat or reset the GPU (nvidia-smi -r) "
            "or reboot.";
    return c;
  }
  std::string list;
  for (const auto& [name, n] : models) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", name, n);
  c.status = Status::pass;
  c.summary = fmt::format("driver {} (CUDA {}), {} GPU{}: {}", nv.driver_version,
                          cuda_version_text(nv.cuda_driver_version), nv.gpus.size(),
                          nv.gpus.size() == 1 ? "" : "s", list);
  return c;
}

}  // namespace ts::doctor
