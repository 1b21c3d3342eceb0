#pragma once
// The GPU side of the doctor: driver, GPUs, PCIe links, processes on each GPU, clock-event
// reasons, ECC and row-remapping counters through the sampler's NVML loader, and Xid lines
// from the kernel log (/dev/kmsg, readable by root or with dmesg access).
// Without a driver: driver_found=false and a one-line reason, never an exception.
#include <string>
#include <string_view>
#include <vector>

#include "doctor/facts.h"

namespace ts::doctor {

// `library`: "" = the sampler's default ($TRAINSCOPE_NVML_LIBRARY, libnvidia-ml.so.1, ...).
NvidiaFacts read_nvidia(const std::string& library = "");

// Kernel-log records that carry an NVIDIA Xid ("NVRM: Xid (PCI:0000:3b:00): 79, ...").
std::vector<std::string> filter_xid_lines(const std::vector<std::string>& records);
// The Xid number in such a line, -1 if none.
int xid_code(std::string_view line);

}  // namespace ts::doctor
