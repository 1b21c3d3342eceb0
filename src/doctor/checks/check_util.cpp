#include "doctor/checks/check_util.h"

#include <cctype>
#include <fmt/format.h>

namespace ts::doctor {

std::array<int, 3> parse_version(std::string_view v) {
  std::array<int, 3> out{-1, 0, 0};
  size_t i = 0;
  for (int part = 0; part < 3 && i < v.size(); ++part) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) break;
    int n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) n = n * 10 + (v[i++] - '0');
    out[static_cast<size_t>(part)] = n;
    if (i >= v.size() || v[i] != '.') break;
    ++i;
  }
  return out;
}

bool version_less(std::string_view a, int major, int minor) {
  auto v = parse_version(a);
  if (v[0] < 0) return false;
  return v[0] < major || (v[0] == major && v[1] < minor);
}

std::string cuda_version_text(int v) {
  if (v <= 0) return "unknown";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string clock_reason_names(int64_t bits) {
  static constexpr std::pair<int64_t, const char*> names[] = {
      {0x1, "gpu_idle"},       {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},    {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},    {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::string out;
  for (auto [bit, name] : names) {
    if (bits >= 0 && (bits & bit)) {
      if (!out.empty()) out += ',';
      out += name;
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace ts::doctor
