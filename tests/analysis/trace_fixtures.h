#pragma once
// The public traces under tests/data (provenance: tests/data/README.md) that several of the folder's
// tests read. Defined once: the folder's tests are one binary, compiled as one unity source
// (tests/CMakeLists.txt).
#include <string>

#include "analysis/store_builder.h"
#include "analysis/trace_analysis.h"
#include "trace/reader.h"

namespace ts::analysis {

inline std::string fixture(const std::string& name) { return std::string(TS_TEST_DATA) + "/" + name; }

inline constexpr const char* kResnet0 = "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
inline constexpr const char* kResnet4 = "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz";
inline constexpr const char* kAlexnet =
    "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz";
inline constexpr const char* kTriton = "hta_triton_example_triton_example.json.gz";
inline constexpr const char* kAmd = "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz";
inline constexpr const char* kCpuOnly = "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
inline constexpr const char* kNccl = "hta_nccl_parser_config_nccl_data.json.gz";
inline constexpr const char* kNsResolution = "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
inline constexpr const char* kSampled = "hta_trace_filter_sampled_rank-0.json.gz";

// The trace under tests/data read and analysed, named by its file.
inline TraceAnalysis analyse_fixture(const char* name) {
  TraceAnalysis a = analyse(trace::read_trace(fixture(name)));
  a.path = name;
  return a;
}

}  // namespace ts::analysis
