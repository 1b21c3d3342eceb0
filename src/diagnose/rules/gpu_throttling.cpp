// gpu-throttling: the GPU slowed its clocks for heat or power (around 83 °C many
// NVIDIA GPUs slow their clocks; nvidia-smi -q shows the GPU's own slowdown temperature). Evidence: NVML clock-event reasons (thermal or power
// bits) in >= 5% of the samples, or a temperature >= 83 °C.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> gpu_throttling(const Evidence& ev) {
  if (!ev.samples || !ev.samples->nvml) return std::nullopt;
  const auto& s = *ev.samples;
  // NVML clock event reason bits (nvml.h nvmlClocksEventReasons).
  constexpr uint64_t kPower = 0x4 | 0x80, kThermal = 0x20 | 0x40, kHw = 0x8;
  bool reasons = s.throttled_pct >= th::kThrottledPct && (s.throttle_reasons_seen & (kPower | kThermal | kHw));
  bool hot = s.temp_max_c >= th::kThrottleTempC;
  if (!reasons && !hot) return std::nullopt;
  Finding f = make("gpu-throttling", Bottleneck::Health, "samples");
  add(f, "throttled_pct", s.throttled_pct, "%");
  if (s.temp_max_c >= 0) add(f, "temp_max_c", s.temp_max_c, "C");
  if (s.power_mean_w >= 0) add(f, "power_mean_w", s.power_mean_w, "W");
  add(f, "reasons_bits", double(s.throttle_reasons_seen), "bitmask");
  std::string why;
  auto add_why = [&](uint64_t bit, const char* name) {
    if (s.throttle_reasons_seen & bit) why += (why.empty() ? "" : ", ") + std::string(name);
  };
  add_why(0x4, "software power cap");
  add_why(0x8, "hardware slowdown");
  add_why(0x20, "software thermal slowdown");
  add_why(0x40, "hardware thermal slowdown");
  add_why(0x80, "power brake");
  if (why.empty()) why = "temperature";
  // Throttled clocks run ~10-30% slower; count a fifth of the throttled time as recoverable.
  f.recoverable_fraction = std::clamp(s.throttled_pct / 100 * 0.2, 0.0, 0.3);
  // Slower clocks stretch only the GPU's busy time: a mostly idle GPU loses little to them.
  if (Util u = gpu_util(ev); u.pct >= 0) f.recoverable_fraction *= u.pct / 100;
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Low);
  f.confidence = reasons ? 0.9 : 0.6;
  f.title = fmt::format("GPU throttling ({}): {:.0f}% of samples{}", why, s.throttled_pct,
                        s.temp_max_c >= 0 ? fmt::format(", up to {:.0f} °C", s.temp_max_c) : "");
  f.gain = fmt::format("clocks drop while throttled: {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "The GPU lowered its clocks because it reached its temperature or power limit; every kernel "
      "runs slower while that lasts. It is a cooling or power-delivery problem, not the code.";
  f.fix = "Check the airflow and fans, the data-centre inlet temperature and the power limit "
          "(nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE).";
  f.fix_code = "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER";
  return f;
}

}  // namespace ts::diagnose::rules
