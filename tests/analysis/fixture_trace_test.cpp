// The analyses on real traces (tests/data, provenance in tests/data/PROVENANCE.md).
// Expected numbers come from tests/analysis/reference_values.py, an independent Python
// implementation of the same definitions (run: /usr/bin/python3 tests/analysis/reference_values.py
// tests/data/<file>); MatchesReferenceScript re-runs it on every fixture when python3 is present
// and compares every value.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/trace_analysis.h"
#include "reference_json.h"
#include "trace/reader.h"

namespace ts::analysis {
namespace {

constexpr int64_t us = 1000, ms = 1000 * us;

std::string fixture(const std::string& name) { return std::string(TS_TEST_DATA) + "/" + name; }

const char* kResnet0 = "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
const char* kResnet4 = "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz";
const char* kAlexnet = "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz";
const char* kTriton = "hta_triton_example_triton_example.json.gz";
const char* kAmd = "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz";
const char* kCpuOnly = "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
const char* kNccl = "hta_nccl_parser_config_nccl_data.json.gz";
const char* kNsResolution = "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
const char* kSampled = "hta_trace_filter_sampled_rank-0.json.gz";

TraceAnalysis analyse_fixture(const char* name) {
  TraceAnalysis a = analyse(trace::read_trace(fixture(name)));
  a.path = name;
  return a;
}

TEST(FixtureTraces, MatchesReferenceScript) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string script = std::string(TS_SOURCE_DIR) + "/tests/analysis/reference_values.py";
  for (const char* name : {kResnet0, kResnet4, kAlexnet, kTriton, kAmd, kCpuOnly, kNccl,
                           kNsResolution, kSampled}) {
    if (!std::filesystem::exists(fixture(name))) continue;
    SCOPED_TRACE(name);
    const std::string json = testing::reference_json(analyse_fixture(name));
    const std::string tmp = ::testing::TempDir() + "/analysis_ref_" + std::to_string(::getpid()) + ".json";
    std::ofstream(tmp) << json;
    const std::string cmd = "/usr/bin/python3 '" + script + "' --check '" + tmp + "' '" + fixture(name) + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    EXPECT_EQ(rc, 0) << cmd;
  }
}

}  // namespace
}  // namespace ts::analysis
