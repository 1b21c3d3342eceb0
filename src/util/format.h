#pragma once
// Human-readable units for terminal reports: "1.23 ms", "45.6 MB", "3.2 GB/s".
#include <cstdint>
#include <string>

namespace ts {

std::string human_ns(double ns);         // 850 ns, 12.3 µs, 4.56 ms, 1.23 s
std::string human_bytes(double bytes);   // 512 B, 1.5 KiB, 12.3 MiB, 2.1 GiB
std::string human_pct(double pct);       // 38.2%
std::string human_rate(double bytes_per_s);  // 3.21 GB/s

}  // namespace ts
