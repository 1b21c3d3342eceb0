#pragma once
// Recognises BLAS and OpenMP runtimes among a process's mapped libraries by basename
// (threadpoolctl's prefixes, REFERENCE.md section 4), plus Debian's alternatives layout
// (/usr/lib/<triplet>/blas/libblas.so.3 is the unoptimised reference BLAS,
//  .../openblas-pthread/libblas.so.3 is OpenBLAS behind the same name).
#include <string>
#include <string_view>
#include <vector>

#include "doctor/facts.h"

namespace ts::doctor {

// Empty vendor when the path is neither BLAS nor OpenMP.
RuntimeLibrary classify_library(std::string_view path);
std::vector<RuntimeLibrary> classify_runtimes(const std::vector<std::string>& libraries);

}  // namespace ts::doctor
