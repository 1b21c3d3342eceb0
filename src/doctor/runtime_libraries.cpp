#include "doctor/runtime_libraries.h"

#include <array>
#include <utility>

namespace ts::doctor {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

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

}  // namespace ts::doctor
