#include "sample/runtime_libraries.h"

#include <array>
#include <set>
#include <utility>

#include "sample/procfs.h"

namespace ts::sample {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

RuntimeLibrary classify_library(std::string_view path) {
  RuntimeLibrary r;
  r.path = std::string(path);
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);

  // OpenMP runtimes. libgomp is GCC's, libiomp5 Intel's, libomp LLVM's; wheels vendor them
  // with hashed names (torch's libgomp-a34b3233.so.1), so match the prefix.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> omp{{
      {"libgomp", "GNU OpenMP"}, {"libiomp5", "Intel OpenMP"}, {"libomp", "LLVM OpenMP"}}};
  for (auto& [prefix, vendor] : omp) {
    if (starts_with(base, prefix)) {
      r.kind = "openmp";
      r.vendor = vendor;
      return r;
    }
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> blas{{
      {"libopenblas", "OpenBLAS"},
      {"libscipy_openblas", "OpenBLAS"},
      {"libmkl_rt", "MKL"},
      {"libmkl_intel_thread", "MKL"},
      {"libmkl_gnu_thread", "MKL"},
      {"libmkl_core", "MKL"},
      {"libblis", "BLIS"},
      {"libflexiblas", "FlexiBLAS"}}};
  for (auto& [prefix, vendor] : blas) {
    if (starts_with(base, prefix)) {
      r.kind = "blas";
      r.vendor = vendor;
      return r;
    }
  }
  // Debian/Ubuntu serve libblas.so.3 through alternatives; the directory tells which one.
  if (starts_with(base, "libblas.so") || starts_with(base, "libcblas.so")) {
    r.kind = "blas";
    if (contains(dir, "openblas")) r.vendor = "OpenBLAS";
    else if (contains(dir, "blis")) r.vendor = "BLIS";
    else if (contains(dir, "atlas")) r.vendor = "ATLAS";
    else if (contains(dir, "mkl")) r.vendor = "MKL";
    else r.vendor = "reference BLAS";
    return r;
  }
  return r;
}

std::vector<RuntimeLibrary> classify_runtimes(const std::vector<std::string>& libraries) {
  std::vector<RuntimeLibrary> out;
  for (const auto& lib : libraries) {
    auto r = classify_library(lib);
    if (!r.kind.empty()) out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> parse_maps_libraries(std::string_view maps) {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  while (!maps.empty()) {
    auto nl = maps.find('\n');
    std::string_view line = maps.substr(0, nl);
    maps = nl == std::string_view::npos ? std::string_view() : maps.substr(nl + 1);
    // address perms offset dev inode pathname: the path is whatever follows the 5th field.
    std::string_view rest = line;
    for (int i = 0; i < 5; ++i) {
      auto sp = rest.find_first_of(' ');
      if (sp == std::string_view::npos) { rest = {}; break; }
      rest = rest.substr(sp);
      rest = trim(rest);
    }
    if (rest.empty() || rest.front() != '/') continue;
    if (auto del = rest.find(" (deleted)"); del != std::string_view::npos) rest = rest.substr(0, del);
    auto slash = rest.rfind('/');
    if (rest.find(".so", slash) == std::string_view::npos) continue;
    if (seen.find(rest) != seen.end()) continue;
    seen.emplace(rest);
    out.emplace_back(rest);
  }
  return out;
}

std::pair<std::string, std::string> parse_cpuinfo(std::string_view text) {
  std::string vendor, model;
  while (!text.empty() && (vendor.empty() || model.empty())) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = trim(line.substr(0, colon));
    auto val = trim(line.substr(colon + 1));
    if (key == "vendor_id" && vendor.empty()) vendor = std::string(val);
    // x86 says "model name"; arm64 has "CPU implementer" and no name.
    if (key == "model name" && model.empty()) model = std::string(val);
    if (key == "CPU implementer" && vendor.empty()) vendor = "ARM implementer " + std::string(val);
  }
  return {vendor, model};
}

ProcessRuntimes read_process_runtimes(int pid) {
  ProcessRuntimes r;
  std::string maps;
  if (!procfs::read_text("/proc/" + std::to_string(pid) + "/maps", maps) || maps.empty()) return r;
  r.readable = true;
  r.libraries = parse_maps_libraries(maps);
  r.runtimes = classify_runtimes(r.libraries);
  return r;
}

std::string host_cpu_vendor() {
  std::string text;
  if (!procfs::read_text("/proc/cpuinfo", text)) return {};
  return parse_cpuinfo(text).first;
}

}  // namespace ts::sample
