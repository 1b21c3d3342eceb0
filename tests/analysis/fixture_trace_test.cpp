// The analyses on real traces (tests/data, provenance in tests/data/PROVENANCE.md).
// Expected numbers are never copied from trainscope's output: they come, at test time, from
// tests/analysis/reference_values.py, an independent Python implementation of the same
// definitions (`ref(fixture, key)`; run it by hand: /usr/bin/python3
// tests/analysis/reference_values.py --flat tests/data/<file>), or are facts read straight from
// the file (device properties, distributedInfo, operator names: the comment says which).
// MatchesReferenceScript compares every value both sides produce, in both directions.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/trace_analysis.h"
#include "analysis/trace_fixtures.h"
#include "reference_json.h"
#include "trace/reader.h"
#include "trace/written_whole.h"
#include "util/error.h"

namespace ts::analysis {
namespace {



// The reference script's values for one fixture ("key" -> JSON text), computed once per fixture.
const std::map<std::string, std::string>& reference(const char* name) {
  static std::map<std::string, std::map<std::string, std::string>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto& out = cache[name];
  const std::string cmd = "/usr/bin/python3 '" + std::string(TS_SOURCE_DIR) +
                          "/tests/analysis/reference_values.py' --flat '" + fixture(name) + "'";
  std::FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  pclose(f);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto tab = line.find('\t');
    if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}
std::string ref_text(const char* name, const std::string& key) {
  const auto& r = reference(name);
  auto it = r.find(key);
  if (it == r.end()) {
    ADD_FAILURE() << name << ": the reference script has no value for " << key;
    return "0";
  }
  return it->second;
}
int64_t ref(const char* name, const std::string& key) { return std::stoll(ref_text(name, key)); }
double ref_pct(const char* name, const std::string& key) { return std::stod(ref_text(name, key)); }

TEST(FixtureTraces, MatchesReferenceScript) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_FAIL() << "no /usr/bin/python3";
  const std::string script = std::string(TS_SOURCE_DIR) + "/tests/analysis/reference_values.py";
  for (const char* name : {kResnet0, kResnet4, kAlexnet, kTriton, kAmd, kCpuOnly, kNccl,
                           kNsResolution, kSampled}) {
    SCOPED_TRACE(name);
    // A fixture that went missing is a failure, not a skipped comparison.
    ASSERT_TRUE(std::filesystem::exists(fixture(name))) << fixture(name) << " is missing (tests/data/PROVENANCE.md)";
    const std::string json = testing::reference_json(analyse_fixture(name));
    const std::string tmp = ::testing::TempDir() + "/analysis_ref_" + std::to_string(::getpid()) + ".json";
    std::ofstream(tmp) << json;
    const std::string cmd = "/usr/bin/python3 '" + script + "' --check '" + tmp + "' '" + fixture(name) + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    EXPECT_EQ(rc, 0) << cmd;
  }
}


// The data-starved ResNet-50 (num_workers=0) and its healthy twin (num_workers=4).
TEST(FixtureTraces, ResnetDataLoaderShare) {
  TraceAnalysis starved = analyse_fixture(kResnet0);
  ASSERT_EQ(starved.steps.steps.size(), 6u);
  EXPECT_EQ(starved.steps.steps.front().number, 5);  // ProfilerStep#5..#10 in the file
  EXPECT_EQ(starved.steps.total_ns, ref(kResnet0, "total_ns"));  // about 1.07 s
  EXPECT_EQ(starved.steps.total.dataloader, ref(kResnet0, "breakdown_ns.dataloader"));  // ~33%: nothing else ran
  EXPECT_EQ(starved.steps.dataloader_host_ns, ref(kResnet0, "dataloader_host_ns"));  // ~39%: main thread blocked
  EXPECT_NEAR(starved.steps.pct(starved.steps.total.dataloader), ref_pct(kResnet0, "breakdown_pct.dataloader"), 1e-3);
  // The host-side DataLoader share, by hand from the two reference numbers: 100 * host / total.
  EXPECT_NEAR(starved.steps.pct(starved.steps.dataloader_host_ns),
              100.0 * double(ref(kResnet0, "dataloader_host_ns")) / double(ref(kResnet0, "total_ns")), 1e-6);
  EXPECT_GT(starved.steps.pct(starved.steps.total.dataloader), 30.0);  // the starved run: a third of the step
  EXPECT_EQ(starved.steps.total.kernel, ref(kResnet0, "breakdown_ns.kernel"));
  EXPECT_EQ(starved.steps.total.total(), starved.steps.total_ns);

  TraceAnalysis healthy = analyse_fixture(kResnet4);
  ASSERT_EQ(healthy.steps.steps.size(), 6u);
  EXPECT_EQ(healthy.steps.total_ns, ref(kResnet4, "total_ns"));
  EXPECT_EQ(healthy.steps.total.dataloader, ref(kResnet4, "breakdown_ns.dataloader"));  // under 1%
  EXPECT_EQ(healthy.steps.dataloader_host_ns, ref(kResnet4, "dataloader_host_ns"));
  EXPECT_LT(healthy.steps.pct(healthy.steps.total.dataloader), 1.0);
  EXPECT_EQ(healthy.steps.total.total(), healthy.steps.total_ns);
}

TEST(FixtureTraces, ResnetKernelsCopiesSyncsMemory) {
  TraceAnalysis a = analyse_fixture(kResnet0);
  EXPECT_EQ(a.kernels.count, ref(kResnet0, "kernels.count"));
  // Per step, by hand: the kernels over the 6 steps.
  EXPECT_DOUBLE_EQ(a.kernels.per_step, double(ref(kResnet0, "kernels.count")) / 6);
  EXPECT_EQ(a.kernels.median_ns, ref(kResnet0, "kernels.median_ns"));
  EXPECT_NEAR(a.kernels.under_10us_pct, ref_pct(kResnet0, "kernels.under_10us_pct"), 1e-3);
  ASSERT_FALSE(a.kernels.top.empty());
  EXPECT_EQ(a.kernels.top[0].count, ref(kResnet0, "kernels.top.0.count"));  // cudnn::detail::dgrad_engine<float, ...>
  EXPECT_EQ(a.kernels.top[0].total_ns, ref(kResnet0, "kernels.top.0.total_ns"));
  EXPECT_EQ(a.kernels.launch.short_kernels, ref(kResnet0, "kernels.short_kernels"));
  EXPECT_EQ(a.gpu.busy_ns, ref(kResnet0, "gpu.busy_ns"));
  EXPECT_EQ(a.gpu.idle_host_wait_ns, ref(kResnet0, "gpu.idle_host_wait_ns"));
  ASSERT_EQ(a.copies.rows.size(), 2u);
  EXPECT_EQ(a.copies.rows[0].direction, "HtoD");
  EXPECT_EQ(a.copies.rows[0].kind, "pageable");
  EXPECT_EQ(a.copies.pageable_count, ref(kResnet0, "copies.HtoD/pageable.count"));
  EXPECT_EQ(a.copies.pageable_bytes, ref(kResnet0, "copies.HtoD/pageable.bytes"));
  // 12 cudaStreamSynchronize + 1 cudaDeviceSynchronize (count the names in the file).
  EXPECT_EQ(a.syncs.count, ref(kResnet0, "syncs.rows.cudaStreamSynchronize.count") +
                               ref(kResnet0, "syncs.rows.cudaDeviceSynchronize.count"));
  EXPECT_EQ(a.syncs.time_ns, ref(kResnet0, "syncs.time_ns"));
  EXPECT_TRUE(a.memory.present);
  EXPECT_TRUE(a.memory.relative);  // 2021 format: no Total Allocated
  EXPECT_EQ(a.memory.peak_allocated, ref(kResnet0, "memory.peak_allocated"));
  // Facts of the file: deviceProperties[0] of the Tesla V100-DGXS-32GB says totalGlobalMem
  // 34084028416 and computeMajor 7 / computeMinor 0; its optimizer steps are Optimizer.step#SGD.
  EXPECT_EQ(a.memory.device_total, 34'084'028'416);
  EXPECT_EQ(a.precision.compute_capability, 70);
  EXPECT_EQ(a.parallel.optimizer, "SGD");
  EXPECT_EQ(a.parallel.optimizer_impl, "single_tensor");  // PyTorch 1.9 SGD: per-parameter aten::add_
}

// Alexnet benchmark (A100): cuda_sync events duplicate the runtime syncs; pageable HtoD copies.
TEST(FixtureTraces, AlexnetSyncEventsAndPageableCopies) {
  TraceAnalysis a = analyse_fixture(kAlexnet);
  EXPECT_TRUE(a.steps.synthetic);  // no ProfilerStep#
  EXPECT_EQ(a.syncs.count, 21);    // 16 cudaStreamSynchronize + 5 cudaDeviceSynchronize (names in the file)
  EXPECT_EQ(a.syncs.time_ns, ref(kAlexnet, "syncs.time_ns"));
  auto row = [&](const std::string& kind) {
    for (const SyncRow& r : a.syncs.rows)
      if (r.kind == kind) return r;
    return SyncRow{};
  };
  EXPECT_EQ(row("Stream Sync").count, 16);
  EXPECT_EQ(row("Context Sync").count, 5);
  EXPECT_EQ(row("Stream Wait Event").count, 20);
  EXPECT_EQ(row("cudaStreamSynchronize").count, 16);
  EXPECT_EQ(a.copies.pageable_count, ref(kAlexnet, "copies.HtoD/pageable.count"));
  EXPECT_EQ(a.copies.pageable_bytes, ref(kAlexnet, "copies.HtoD/pageable.bytes"));
  EXPECT_EQ(a.copies.pageable_time_ns, ref(kAlexnet, "copies.HtoD/pageable.time_ns"));
  EXPECT_EQ(a.kernels.count, ref(kAlexnet, "kernels.count"));
  EXPECT_EQ(a.kernels.launch.runtime_outliers, ref(kAlexnet, "kernels.runtime_outliers"));
  EXPECT_EQ(a.precision.compute_capability, 80);
  EXPECT_GT(a.precision.gemm_kernels, 0);
  EXPECT_GT(a.precision.time_by_class_ns.at("fp32"), 0);  // ampere_sgemm_*, scudnn
  EXPECT_GT(a.precision.time_by_class_ns.at("tf32"), 0);  // sm80_xmma_fprop_*_tf32*
}

TEST(FixtureTraces, TritonExampleIsCompiled) {
  TraceAnalysis a = analyse_fixture(kTriton);
  EXPECT_TRUE(a.parallel.compiled);
  EXPECT_EQ(a.kernels.triton_kernels, 1);
  EXPECT_EQ(a.kernels.count, 1);
  EXPECT_EQ(a.kernels.launch.launches, 1);  // launched by cuLaunchKernel (cuda_driver)
  EXPECT_EQ(a.syncs.count, 1);              // cudaDeviceSynchronize
  EXPECT_EQ(a.steps.total.total(), a.steps.total_ns);
}

// Rank 0 of a 2-GPU DDP job: NCCL all-reduce kernels, SGD with foreach ops.
TEST(FixtureTraces, NcclCommunicationShare) {
  TraceAnalysis a = analyse_fixture(kNccl);
  ASSERT_EQ(a.steps.steps.size(), 3u);
  EXPECT_TRUE(a.parallel.ddp);
  EXPECT_FALSE(a.parallel.data_parallel);
  EXPECT_EQ(a.parallel.rank, 0);
  EXPECT_EQ(a.parallel.world_size, 2);  // distributedInfo: backend nccl, rank 0, world_size 2
  EXPECT_EQ(a.parallel.backend, "nccl");
  EXPECT_EQ(a.parallel.comm_kernels, ref(kNccl, "comm.comm_kernels"));
  EXPECT_EQ(a.parallel.comm_time_ns, ref(kNccl, "comm.comm_time_ns"));
  EXPECT_NEAR(a.parallel.comm_pct_of_step, ref_pct(kNccl, "comm.comm_pct_of_step"), 1e-4);
  EXPECT_NEAR(a.parallel.comm_pct_of_gpu, ref_pct(kNccl, "comm.comm_pct_of_gpu"), 1e-4);
  EXPECT_NEAR(a.parallel.comm_overlap_pct, ref_pct(kNccl, "comm.comm_overlap_pct"), 1e-4);
  EXPECT_EQ(a.steps.total.communication, ref(kNccl, "breakdown_ns.communication"));
  EXPECT_EQ(a.parallel.optimizer, "SGD");
  EXPECT_EQ(a.parallel.optimizer_impl, "foreach");
  EXPECT_EQ(a.syncs.count, ref(kNccl, "syncs.rows.cudaEventSynchronize.count"));  // all cudaEventSynchronize
}

TEST(FixtureTraces, AmdTraceDropsTailStepAndCannotTellPinned) {
  TraceAnalysis a = analyse_fixture(kAmd);
  ASSERT_EQ(a.steps.steps.size(), 1u);
  EXPECT_EQ(a.steps.dropped_tail_steps, 1);
  ASSERT_EQ(a.copies.rows.size(), 1u);
  EXPECT_EQ(a.copies.rows[0].kind, "host");
  EXPECT_EQ(a.copies.pageable_count, 0);
  EXPECT_EQ(a.copies.blocking_memcpy_calls, 2);  // hipMemcpyWithStream
  EXPECT_EQ(a.syncs.count, 2);
  EXPECT_EQ(a.kernels.count, ref(kAmd, "kernels.count"));
  EXPECT_GT(a.precision.gemm_kernels, 0);  // Cijk_* Tensile GEMMs
  EXPECT_DOUBLE_EQ(a.precision.tensor_core_share_pct, 100.0);  // MFMA
  EXPECT_EQ(a.parallel.optimizer, "SGD");
  EXPECT_EQ(a.parallel.optimizer_impl, "foreach");
}

TEST(FixtureTraces, CpuOnlyAndBareArrayTraces) {
  TraceAnalysis cpu = analyse_fixture(kCpuOnly);
  EXPECT_FALSE(cpu.gpu.present);
  ASSERT_EQ(cpu.steps.steps.size(), 1u);
  EXPECT_EQ(cpu.steps.total.communication, ref(kCpuOnly, "breakdown_ns.communication"));  // gloo:* annotations
  EXPECT_EQ(cpu.steps.total.total(), cpu.steps.total_ns);

  TraceAnalysis bare = analyse_fixture("torch113_bare_array_cpu.json");
  ASSERT_EQ(bare.steps.steps.size(), 2u);
  EXPECT_FALSE(bare.steps.synthetic);
  EXPECT_EQ(bare.steps.total_ns, ref("torch113_bare_array_cpu.json", "total_ns"));
  EXPECT_EQ(bare.steps.total.cpu_exec, ref("torch113_bare_array_cpu.json", "breakdown_ns.cpu_exec"));
  EXPECT_FALSE(bare.gpu.present);
}

// Several traces: analysed in threads, one row each. These three are not one job (a DDP rank 0 on
// 2023 and two ResNet runs recorded a day apart in 2021): no straggler among them.
TEST(FixtureTraces, MultiTraceRankTable) {
  std::vector<std::string> paths = {fixture(kNccl), fixture(kResnet4), fixture(kResnet0)};
  MultiTraceAnalysis m = analyse_traces(paths, {}, 2);
  ASSERT_EQ(m.traces.size(), 3u);
  EXPECT_EQ(m.traces[0].path, paths[0]);
  ASSERT_EQ(m.ranks.size(), 3u);
  // The NCCL trace says rank 0; the ResNet traces have no distributedInfo: their position.
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.ranks[1].rank, 1);
  EXPECT_EQ(m.ranks[2].rank, 2);
  EXPECT_EQ(m.ranks[0].median_step_ns, m.traces[0].steps.median_step_ns);
  // |communication kernels| inside the 3 steps, by hand: comm share of the step x step time / 3.
  EXPECT_NEAR(m.ranks[0].comm_ns_per_step,
              ref_pct(kNccl, "comm.comm_pct_of_step") / 100 * double(ref(kNccl, "total_ns")) / 3, 1e3);
  EXPECT_FALSE(m.one_job);
  EXPECT_NE(m.job_basis.find("different times"), std::string::npos) << m.job_basis;
  EXPECT_EQ(m.straggler_rank, -1);
  for (const auto& r : m.ranks) EXPECT_FALSE(r.straggler);

  // The two ResNet runs alone: both on the epoch clock, a day apart.
  MultiTraceAnalysis two = analyse_traces({fixture(kResnet4), fixture(kResnet0)}, {}, 2);
  EXPECT_FALSE(two.one_job);
  EXPECT_NE(two.job_basis.find("different times"), std::string::npos) << two.job_basis;
  EXPECT_EQ(two.straggler_rank, -1);
}

// Ranks of one job: rank numbers from the file names (HTA's and trainscope run's naming), or the
// same steps recorded at the same time; a duplicated rank means two runs.
TEST(FixtureTraces, OneJobFromNamesOrOverlappingSpans) {
  EXPECT_EQ(rank_from_file_name("/x/trace_rank1.pt.trace.json"), 1);
  EXPECT_EQ(rank_from_file_name("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"), 34);
  EXPECT_EQ(rank_from_file_name("worker0.1623143089861.pt.trace.json.gz"), -1);
  TraceAnalysis a = analyse_fixture(kResnet0), b = analyse_fixture(kResnet4);
  a.path = "run/trace_rank0.json", b.path = "run/trace_rank1.json";
  MultiTraceAnalysis named = compare_ranks({a, b});
  EXPECT_TRUE(named.one_job) << named.job_basis;
  EXPECT_EQ(named.ranks[1].rank, 1);
  EXPECT_GE(named.straggler_rank, 0);
  b.path = "other/trace_rank0.json";
  EXPECT_FALSE(compare_ranks({a, b}).one_job);  // rank 0 twice
  // No names, no distributedInfo: b moved onto a's time (the same clock, the same minutes).
  a.path = "a.json", b.path = "b.json";
  b.base_time_ns = a.steps.steps.front().start_ns - b.steps.steps.front().start_ns;
  MultiTraceAnalysis together = compare_ranks({a, b});
  EXPECT_TRUE(together.one_job) << together.job_basis;
  EXPECT_NE(together.job_basis.find("overlapping"), std::string::npos);
}

// A job directory (`trainscope run --job-dir`) whose node stopped while its profiler wrote: the
// cut trace is left out and named, the rest analysed. Cut just after an event's '}' (plain) and
// in the middle of the gzip stream; told by the reader's own end of data (trace::CutOffError).
TEST(FixtureTraces, JobDirectoryLeavesOutCutTraces) {
  const std::string job = std::filesystem::temp_directory_path() / ("ts_cut_job_" + std::to_string(::getpid()));
  std::filesystem::create_directories(job + "/node0");
  std::filesystem::create_directories(job + "/node1");
  std::filesystem::copy_file(fixture(kResnet0), job + "/node0/trace_rank0.json.gz");
  std::filesystem::copy_file(fixture(kResnet4), job + "/node0/trace_rank1.json.gz");
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  const std::string gz = slurp(fixture(kResnet4));
  std::ofstream(job + "/node1/trace_rank2.json.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);
  std::FILE* z = ::popen(("zcat '" + fixture(kAlexnet) + "'").c_str(), "r");
  ASSERT_NE(z, nullptr);
  std::string json;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, z)) > 0;) json.append(buf, n);
  ::pclose(z);
  const size_t after_event = json.rfind('}', json.size() / 2) + 1;
  std::ofstream(job + "/node1/trace_rank3.json", std::ios::binary) << json.substr(0, after_event);

  bool is_job = false;
  const auto files = expand_trace_paths({job}, &is_job);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_TRUE(is_job);
  std::vector<std::string> left_out;
  MultiTraceAnalysis m = analyse_traces(files, {}, 2, {}, &left_out);
  ASSERT_EQ(left_out.size(), 2u);
  EXPECT_EQ(left_out[0].rfind(job + "/node1/trace_rank2.json.gz: cut off, left out (byte ", 0), 0u) << left_out[0];
  EXPECT_NE(left_out[0].find("gzip"), std::string::npos) << left_out[0];
  EXPECT_EQ(left_out[1].rfind(job + "/node1/trace_rank3.json: cut off, left out (byte " + std::to_string(after_event) +
                                  ": unexpected end of file",
                              0),
            0u)
      << left_out[1];
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.ranks[1].rank, 1);
  // Without left_out (traces named one by one) a cut trace is the error it is.
  EXPECT_THROW(analyse_traces(files, {}, 2), trace::CutOffError);
  // A damaged byte is no cut: still an error with left_out.
  std::string bad = json;
  const size_t colon = json.find("\"ph\":", json.size() / 2) + 4;
  ASSERT_EQ(bad[colon], ':');
  bad[colon] = '@';
  std::ofstream(job + "/node1/trace_rank3.json", std::ios::binary | std::ios::trunc) << bad;
  std::filesystem::remove(job + "/node1/trace_rank2.json.gz");
  left_out.clear();
  EXPECT_THROW(analyse_traces(expand_trace_paths({job}), {}, 2, {}, &left_out), UserError);
  std::filesystem::remove_all(job);
}

TEST(FixtureTraces, DirectoryExpandsAndBadFilesNameThemselves) {
  auto files = expand_trace_paths({std::string(TS_TEST_DATA)});
  EXPECT_GE(files.size(), 9u);
  EXPECT_THROW(analyse_traces({fixture("does-not-exist.json")}), UserError);
}

}  // namespace
}  // namespace ts::analysis
