// gpu-throttle: clock-event ("throttle") reasons that are active while the GPU is idle. Under
// load a power cap is normal; at idle, thermal or hardware slowdown means cooling or power
// delivery is already failing before training starts.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

Check check_gpu_throttle(const DoctorFacts& f) {
  Check c = make_check("gpu-throttle", "No throttling at idle");
  if (!f.nvidia.driver_found || f.nvidia.gpus.empty()) {
    c.status = Status::skip;
    c.summary = "no NVIDIA GPU";
    return c;
  }
  constexpr int64_t kHw = 0x8 | 0x40 | 0x80;  // hw_slowdown, hw_thermal, hw_power_brake
  constexpr int64_t kSw = 0x4 | 0x20;         // sw_power_cap, sw_thermal
  std::vector<std::string> hw, sw;
  int known = 0;
  for (const auto& g : f.nvidia.gpus) {
    if (g.throttle_reasons < 0) continue;
    ++known;
    const bool idle = g.util_ratio >= 0 && g.util_ratio < 0.05;
    c.add(fmt::format("GPU {}", g.index), fmt::format("{} ({:.0f}% busy)", clock_reason_names(g.throttle_reasons),
                                                      g.util_ratio * 100));
    if (!idle) continue;
    if (g.throttle_reasons & kHw) hw.push_back(fmt::format("GPU {}: {}", g.index, clock_reason_names(g.throttle_reasons & kHw)));
    else if (g.throttle_reasons & kSw) sw.push_back(fmt::format("GPU {}: {}", g.index, clock_reason_names(g.throttle_reasons & kSw)));
  }
  if (known == 0) {
    c.status = Status::skip;
    c.summary = "the driver does not report clock-event reasons";
    return c;
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!hw.empty()) {
    c.status = Status::fail;
    c.summary = "hardware slowdown while idle: " + join(hw);
    c.fix = "Check cooling (fans, airflow, inlet temperature) and power delivery (PSU, cables); "
            "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER shows the details.";
    return c;
  }
  if (!sw.empty()) {
    c.status = Status::warn;
    c.summary = "software power/thermal limit active while idle: " + join(sw);
    c.fix = "Check the power limit (nvidia-smi -q -d POWER: a lowered limit?) and the GPU temperature at idle.";
    return c;
  }
  c.status = Status::pass;
  c.summary = "no power or thermal slowdown while idle";
  return c;
}

}  // namespace ts::doctor
