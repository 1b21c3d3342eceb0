// gpu-errors: ECC errors, row remapping and Xid events. Uncorrectable ECC errors since boot,
// a pending row remap (needs a GPU reset) or a critical Xid (79 fell off the bus, 48/94/95
// ECC, 74 NVLink, 63/64 remapping, 92 high single-bit rate, 119/120 GSP) make slow or
// crashing training the GPU's fault, not the script's.
#include <fmt/format.h>

#include <set>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"
#include "doctor/nvidia_facts.h"

namespace ts::doctor {

Check check_gpu_errors(const DoctorFacts& f) {
  Check c = make_check("gpu-errors", "ECC and Xid errors");
  const auto& nv = f.nvidia;
  if (!nv.driver_found || nv.gpus.empty()) {
    c.status = Status::skip;
    c.summary = "no NVIDIA GPU";
    return c;
  }
  std::vector<std::string> failures, warnings;
  int ecc_known = 0;
  for (const auto& g : nv.gpus) {
    if (g.ecc_uncorrected_volatile >= 0 || g.remap_pending >= 0) ++ecc_known;
    c.add(fmt::format("GPU {}", g.index),
          fmt::format("uncorrected ECC {} (since boot) / {} (lifetime), corrected {}, remap pending {}, remap failed {}",
                      g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate, g.ecc_corrected_volatile,
                      g.remap_pending, g.remap_failure));
    if (g.ecc_uncorrected_volatile > 0)
      failures.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors since boot", g.index, g.ecc_uncorrected_volatile));
    if (g.remap_failure > 0) failures.push_back(fmt::format("GPU {}: row remapping failed", g.index));
    if (g.remap_pending > 0) warnings.push_back(fmt::format("GPU {}: a row remap is pending (reset the GPU)", g.index));
    if (g.ecc_uncorrected_aggregate > 0 && g.ecc_uncorrected_volatile <= 0)
      warnings.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors in its lifetime", g.index, g.ecc_uncorrected_aggregate));
  }
  static const std::set<int> critical = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120};
  std::set<int> codes;
  for (const auto& line : nv.xid_lines) codes.insert(xid_code(line));
  c.add("kernel log", nv.kernel_log_readable ? fmt::format("{} Xid line{}", nv.xid_lines.size(), nv.xid_lines.size() == 1 ? "" : "s")
                                             : "not readable (Xid not checked; run as root or with dmesg access)");
  for (size_t i = 0; i < nv.xid_lines.size() && i < 5; ++i) c.add("Xid", nv.xid_lines[nv.xid_lines.size() - 1 - i]);
  for (int code : codes) {
    if (critical.count(code)) failures.push_back(fmt::format("Xid {} in the kernel log", code));
    else if (code >= 0) warnings.push_back(fmt::format("Xid {} in the kernel log", code));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!failures.empty()) {
    c.status = Status::fail;
    c.summary = join(failures);
    c.fix = "Drain the GPU: reset it (nvidia-smi -r) or reboot; persistent uncorrectable errors or Xid 79/48/95 "
            "mean an RMA. NVIDIA's Xid table explains each code.";
    return c;
  }
  if (!warnings.empty()) {
    c.status = Status::warn;
    c.summary = join(warnings);
    c.fix = "Look the Xid codes up in NVIDIA's Xid table; reset the GPU when a remap is pending.";
    return c;
  }
  if (ecc_known == 0 && !nv.kernel_log_readable) {
    c.status = Status::skip;
    c.summary = "ECC not reported (consumer GPU or ECC off) and the kernel log is not readable";
    return c;
  }
  c.status = Status::pass;
  c.summary = ecc_known > 0 ? "no ECC errors, no pending remaps" + std::string(nv.kernel_log_readable ? ", no Xid" : "")
                            : "no Xid in the kernel log (ECC not reported by these GPUs)";
  return c;
}

}  // namespace ts::doctor
