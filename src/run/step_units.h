#pragma once
// The agent's records count nanoseconds; summaries and reports speak milliseconds.
#include <cstdint>

namespace ts::run {

inline double ms(int64_t ns) { return ns / 1e6; }

}  // namespace ts::run
