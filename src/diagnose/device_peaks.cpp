#include "diagnose/device_peaks.h"

namespace ts::diagnose {

DevicePeak device_peak(const std::string& n) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("H200")) return {67, 495, 989};
  if (has("H100")) return has("PCIe") ? DevicePeak{51, 378, 756} : DevicePeak{67, 495, 989};
  if (has("A100")) return {19.5, 156, 312};
  if (has("V100")) return {15.7, 0, 125};
  return {};
}

}  // namespace ts::diagnose
