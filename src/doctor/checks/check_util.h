#pragma once
// Small helpers shared by the checks.
#include <array>
#include <string>
#include <string_view>

#include "doctor/check.h"

namespace ts::doctor {

// "2.4.1+cu121" -> {2,4,1}; "1.13.0a0" -> {1,13,0}; missing parts are 0, unparsable -1.
std::array<int, 3> parse_version(std::string_view v);
// a < b on (major, minor).
bool version_less(std::string_view a, int major, int minor);

inline Check make_check(std::string id, std::string title) {
  Check c;
  c.id = std::move(id);
  c.title = std::move(title);
  return c;
}

// 12040 -> "12.4"
std::string cuda_version_text(int v);
// Names of the set clock-event reason bits: "sw_power_cap,hw_thermal".
std::string clock_reason_names(int64_t bits);

}  // namespace ts::doctor
