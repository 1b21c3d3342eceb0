#include "sample/readings.h"

namespace ts::sample {

std::string decode_clock_reasons(uint64_t bits) {
  static const std::pair<uint64_t, const char*> names[] = {
      {kReasonGpuIdle, "gpu_idle"},          {kReasonAppClocks, "app_clocks"},
      {kReasonSwPowerCap, "sw_power_cap"},   {kReasonHwSlowdown, "hw_slowdown"},
      {kReasonSyncBoost, "sync_boost"},      {kReasonSwThermal, "sw_thermal"},
      {kReasonHwThermal, "hw_thermal"},      {kReasonHwPowerBrake, "hw_power_brake"},
      {kReasonDisplayClocks, "display_clocks"},
  };
  std::string out;
  for (const auto& [bit, name] : names) {
    if (!(bits & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  uint64_t known = 0x1ff;
  if (bits & ~known) {
    if (!out.empty()) out += ',';
    out += "other";
  }
  return out;
}

}  // namespace ts::sample
