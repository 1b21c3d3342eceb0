// The parallel reader (trace::ReadOptions::threads, src/trace/parallel_events.cpp) must not
// change a single byte of what `analyze --json` prints: every fixture and a large trace made of
// many copies of a real one, read serially and on several threads with small chunks (every
// split path), analysed, diagnosed and rendered, give identical JSON reports. The same holds
// for analyse() on one thread and on two (AnalyseOptions::threads: the passes shared between them).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "analysis/trace_analysis.h"
#include "analysis/trace_fixtures.h"
#include "diagnose/diagnose.h"
#include "report/report.h"
#include "trace/reader.h"

namespace ts::analysis {
namespace {

// analyse_threads: 1 serial, 2 the passes on two threads, 0 as analyze picks.
std::string report_of(const std::string& path, const trace::ReadOptions& ro, int analyse_threads = 1) {
  trace::EventStore store = trace::read_trace(path, ro);
  AnalyseOptions opt;
  opt.threads = analyse_threads;
  TraceAnalysis a = analyse(store, opt);
  a.path = "trace";
  a.read_seconds = a.analyse_seconds = 0;  // the only timings in the report
  diagnose::Evidence ev;
  ev.trace = a;
  return report::render_json(report::from_evidence(ev, diagnose::diagnose(ev)));
}

trace::ReadOptions with(int threads, uint64_t chunk, uint64_t overlap) {
  trace::ReadOptions o;
  o.threads = threads;
  o.parallel_min_bytes = 0;
  o.chunk_bytes = chunk;
  o.chunk_overlap = overlap;
  return o;
}

std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(ParallelReadReport, EveryFixtureReportsIdentically) {
  for (const char* name : {"tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
                           "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
                           "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
                           "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                           "hta_trace_filter_sampled_rank-0.json.gz", "hta_nccl_parser_config_nccl_data.json.gz",
                           "hta_triton_example_triton_example.json.gz",
                           "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                           "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "torch113_bare_array_cpu.json"}) {
    SCOPED_TRACE(name);
    trace::ReadOptions one;
    one.threads = 1;
    const std::string want = report_of(fixture(name), one);
    ASSERT_GT(want.size(), 1000u);
    EXPECT_EQ(report_of(fixture(name), with(3, 65536, 4096)), want);  // .gz: the inflating reader
    EXPECT_EQ(report_of(fixture(name), with(2, 0, 0)), want);         // the sizes a real read picks
    EXPECT_EQ(report_of(fixture(name), one, 2), want);                 // analysed on two threads
  }
}

TEST(ParallelReadReport, LargeRepeatedTraceReportsIdentically) {
  // ~70 MB: the ns-resolution trace's events laid end to end 5 times (bench/trace/make_big_trace.py),
  // plain (mapped) and gzipped, each split into ~100 to ~1000 chunks.
  const std::string dir = ::testing::TempDir() + "/par_report_" + std::to_string(::getpid());
  const std::string json = dir + "/big.json";
  shell("mkdir -p '" + dir + "' && /usr/bin/env python3 '" + std::string(TS_SOURCE_DIR) +
        "/bench/trace/make_big_trace.py' '" +
        fixture("hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz") + "' '" + json +
        "' 60 2>/dev/null && gzip -1 -k -f '" + json + "'");
  std::ifstream probe(json);
  ASSERT_TRUE(probe.good()) << "make_big_trace.py failed";
  trace::ReadOptions one;
  one.threads = 1;
  const std::string want = report_of(json, one);
  EXPECT_EQ(report_of(json, with(2, 0, 0), 0), want);  // as analyze runs: parallel read and analysis
  EXPECT_EQ(report_of(json, one, 2), want);
  EXPECT_EQ(report_of(json, with(3, 100000, 20000)), want);
  EXPECT_EQ(report_of(json + ".gz", with(2, 0, 0)), want);
  EXPECT_EQ(report_of(json + ".gz", with(4, 600000, 1000)), want);
  shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace ts::analysis
