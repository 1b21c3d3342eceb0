#pragma once
// The BLAS and OpenMP runtimes a process really runs on, read from its /proc/PID/maps, and the
// CPU they run on (/proc/cpuinfo vendor_id). Used by `trainscope doctor` (a probe process or
// --pid) and by `trainscope run` (the job's training processes, live) — /proc only.
// Libraries are recognised by basename (threadpoolctl's prefixes),
// plus Debian's alternatives layout (/usr/lib/<triplet>/blas/libblas.so.3 is the unoptimised
// reference BLAS, .../openblas-pthread/libblas.so.3 is OpenBLAS behind the same name).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ts::sample {

// A BLAS or OpenMP runtime found in a process's /proc/PID/maps.
struct RuntimeLibrary {
  std::string path;
  std::string kind;    // "blas" or "openmp"
  std::string vendor;  // "OpenBLAS", "MKL", "BLIS", "FlexiBLAS", "ATLAS", "reference BLAS",
                       // "GNU OpenMP", "Intel OpenMP", "LLVM OpenMP"
};

// Empty kind and vendor when the path is neither BLAS nor OpenMP.
RuntimeLibrary classify_library(std::string_view path);
std::vector<RuntimeLibrary> classify_runtimes(const std::vector<std::string>& libraries);

// Distinct shared-object paths from /proc/PID/maps text (the 6th column, only *.so*).
std::vector<std::string> parse_maps_libraries(std::string_view maps);
// /proc/cpuinfo: vendor_id and "model name" of the first CPU.
std::pair<std::string, std::string> parse_cpuinfo(std::string_view text);

// /proc/PID/maps of a live process -> its BLAS/OpenMP runtimes. `readable` false when the
// process is gone or its maps are not ours to read.
struct ProcessRuntimes {
  bool readable = false;
  std::vector<std::string> libraries;
  std::vector<RuntimeLibrary> runtimes;
};
ProcessRuntimes read_process_runtimes(int pid);
// This host's vendor_id ("GenuineIntel", "AuthenticAMD"); "" when /proc/cpuinfo has none.
std::string host_cpu_vendor();

}  // namespace ts::sample
