// pcie-link: a GPU whose PCIe link trained below its maximum width (a x16 card in a x8 slot,
// a bad riser) or generation moves host-to-device data at a fraction of the speed.
// GPUs drop the link generation at idle to save power, so a low generation only counts
// while the GPU is busy; a narrow width counts always.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_pcie_link(const DoctorFacts& f) {
  Check c = make_check("pcie-link", "PCIe link at full speed");
  if (!f.nvidia.driver_found || f.nvidia.gpus.empty()) {
    c.status = Status::skip;
    c.summary = "no NVIDIA GPU";
    return c;
  }
  std::vector<std::string> narrow, slow, idle_low;
  int known = 0;
  for (const auto& g : f.nvidia.gpus) {
    if (g.pcie_gen < 0 || g.pcie_gen_max < 0 || g.pcie_width < 0 || g.pcie_width_max < 0) continue;
    ++known;
    c.add(fmt::format("GPU {}", g.index), fmt::format("gen {} of {}, x{} of x{}, busy {:.0f}%", g.pcie_gen,
                                                      g.pcie_gen_max, g.pcie_width, g.pcie_width_max,
                                                      g.util_ratio * 100));
    if (g.pcie_width < g.pcie_width_max) narrow.push_back(fmt::format("GPU {} x{}/x{}", g.index, g.pcie_width, g.pcie_width_max));
    if (g.pcie_gen < g.pcie_gen_max) {
      if (g.util_ratio > 0.05) slow.push_back(fmt::format("GPU {} gen {}/{}", g.index, g.pcie_gen, g.pcie_gen_max));
      else idle_low.push_back(std::to_string(g.index));
    }
  }
  if (known == 0) {
    c.status = Status::skip;
    c.summary = "the driver does not report PCIe link state";
    return c;
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!narrow.empty() || !slow.empty()) {
    c.status = Status::warn;
    c.summary = "PCIe link below its maximum: " + join(narrow) + (narrow.empty() || slow.empty() ? "" : ", ") + join(slow);
    c.fix = "Check the slot (x16 electrical?), risers and BIOS PCIe settings; nvidia-smi -q -d PCIE shows the link. "
            "Pinned memory and fewer host-to-device copies soften the cost meanwhile.";
    return c;
  }
  c.status = Status::pass;
  c.summary = idle_low.empty()
                  ? "every link at its maximum generation and width"
                  : fmt::format("full width; GPU {} idle at a lower generation (normal power saving: rerun under load "
                                "to see the trained generation)", join(idle_low));
  return c;
}

}  // namespace ts::doctor
