// The record decoder and the step summary, on records built here byte by byte the way
// agent/trainscope_agent/channel.py packs them.
#include <gtest/gtest.h>

#include <cstring>

#include "run/agent_records.h"
#include "run/record_bytes.h"
#include "run/agent_summary.h"
#include "run/died_at_exit.h"
#include "support/file_lines.h"
#include "util/stats.h"

namespace ts::run {
namespace {

using test::header;
using test::text_rec;

std::string step_rec(uint32_t pid, uint32_t seq, int64_t step, int64_t flags, int64_t dur_ns, int64_t data_ns,
                     int64_t rss = 100, int64_t cuda_alloc = -1, int64_t cuda_peak = -1, int64_t io_ns = 0) {
  std::array<int64_t, 32> f = {};
  f[0] = step;
  f[1] = flags;
  f[3] = dur_ns;
  f[4] = data_ns;
  f[14] = io_ns;
  f[18] = cuda_alloc, f[19] = cuda_alloc < 0 ? -1 : 2 * cuda_alloc, f[20] = cuda_peak;
  f[21] = rss;
  return test::step_record(pid, seq, f, 0.5, 26);  // the 26 fields of an agent before field 26
}

TEST(RecordDecoder, AnyChunkingGivesTheSameRecords) {
  std::string stream = text_rec(7, 1, "kind=loader\nbatch_size=32\nnum_workers=4\npin_memory=1");
  for (int i = 1; i <= 5; ++i) stream += step_rec(7, 1 + i, i, kStepOptimizer, 10'000'000, 4'000'000);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{100}, stream.size()}) {
    Records r;
    RecordDecoder d(r);
    for (size_t p = 0; p < stream.size(); p += chunk) d.feed(std::string_view(stream).substr(p, chunk));
    ASSERT_EQ(r.steps.size(), 5u) << "chunk " << chunk;
    ASSERT_EQ(r.texts.size(), 1u);
    EXPECT_EQ(r.texts[0].kind, "loader");
    EXPECT_EQ(r.texts[0].get_int("batch_size"), 32);
    EXPECT_TRUE(r.texts[0].get_bool("pin_memory"));
    EXPECT_EQ(r.steps[4].step, 5);
    EXPECT_EQ(r.steps[4].data_wait_ns, 4'000'000);
    EXPECT_DOUBLE_EQ(r.steps[4].loss, 0.5);
    EXPECT_EQ(r.seq_gaps, 0u);
    EXPECT_EQ(d.pending(), 0u);
  }
}

TEST(RecordDecoder, SkipsGarbageAndCountsDroppedRecords) {
  Records r;
  RecordDecoder d(r);
  d.feed("garbage!" + step_rec(9, 1, 1, 1, 5, 1) + "xx" + step_rec(9, 4, 2, 1, 5, 1));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.bad_bytes, 10u);
  EXPECT_EQ(r.seq_gaps, 2u);  // seq 2 and 3 never arrived
}

TEST(AgentSummary, MediansSkipWarmupAndProfiledSteps) {
  Records r;
  RecordDecoder d(r);
  std::string s = text_rec(5, 1, "kind=hello\npython=3.11.2");
  uint32_t seq = 2;
  // 12 steps: warm-up steps 1-2 are slow, 6-7 profiled and slow; the rest 10 ms with 6 ms wait.
  for (int i = 1; i <= 12; ++i) {
    bool slow = i <= 2 || i == 6 || i == 7;
    int64_t flags = kStepOptimizer | ((i == 6 || i == 7) ? kStepProfiled : 0);
    s += step_rec(5, seq++, i, flags, slow ? 90'000'000 : 10'000'000, 6'000'000, 1000 + 100 * i);
  }
  s += step_rec(6, 1, 1, kStepOptimizer, 1, 1);  // another process with one step: not the main one
  d.feed(s);
  auto sum = summarise(r);
  EXPECT_EQ(sum.main_pid, 5);
  EXPECT_EQ(sum.evidence.steps, 12);
  EXPECT_EQ(sum.warmup_steps, 2);
  EXPECT_DOUBLE_EQ(sum.evidence.step_ms, 10.0);
  EXPECT_DOUBLE_EQ(sum.evidence.data_wait_ms, 6.0);
  EXPECT_NEAR(sum.evidence.data_wait_pct, 60.0, 1e-9);
  EXPECT_EQ(sum.evidence.mem_source, "rss");
  EXPECT_NEAR(sum.evidence.mem_slope_bytes_per_step, 100.0, 1e-9);
  EXPECT_EQ(sum.evidence.python_version, "3.11.2");
}

// The steps whose fetch waited for DataLoader workers to start (flag 64) are left out of the steady
// steps, as profiled ones are: their wait is worker-restarts' on the run's scale.
TEST(AgentSummary, StepsThatWaitedForWorkersToStartAreNotSteady) {
  Records r;
  RecordDecoder d(r);
  std::string s;
  uint32_t seq = 1;
  for (int i = 1; i <= 12; ++i) {
    const bool start = i == 5 || i == 9;  // a new pass's first fetch: 300 ms for its workers
    s += step_rec(5, seq++, i, kStepOptimizer | (start ? kStepWorkers : 0), start ? 310'000'000 : 10'000'000,
                  start ? 300'000'000 : 1'000'000);
  }
  d.feed(s);
  auto sum = summarise(r);
  EXPECT_DOUBLE_EQ(sum.evidence.step_ms, 10.0);
  EXPECT_DOUBLE_EQ(sum.evidence.data_wait_ms, 1.0);  // the mean over the steady steps only
  EXPECT_NEAR(sum.evidence.data_wait_pct, 10.0, 1e-9);
}

// A checkpoint every fourth step: the median step writes nothing, yet the writes are a share of the
// run. The I/O per step is their mean, as the wait's is, so that it is io_pct of the mean step (the
// step line printed "I/O 0.00 ms (3%)" on timm's train.py, which saves a checkpoint each epoch).
TEST(AgentSummary, IoPerStepIsTheMeanOfWhatItsShareCounts) {
  Records r;
  RecordDecoder d(r);
  std::string s;
  uint32_t seq = 1;
  for (int i = 1; i <= 12; ++i) {
    const bool save = i % 4 == 0;
    s += step_rec(5, seq++, i, kStepOptimizer, save ? 40'000'000 : 10'000'000, 1'000'000, 100, -1, -1,
                  save ? 30'000'000 : 0);
  }
  d.feed(s);
  auto sum = summarise(r);
  ASSERT_EQ(sum.warmup_steps, 2);  // steps 3-12 are steady: saves at 4, 8 and 12
  EXPECT_DOUBLE_EQ(sum.evidence.step_ms, 10.0);
  EXPECT_NEAR(sum.evidence.io_ms, 9.0, 1e-9);  // 90 ms over 10 steps
  EXPECT_NEAR(sum.evidence.io_pct, 100.0 * 90 / 190, 1e-9);
  EXPECT_NEAR(sum.evidence.io_ms, sum.evidence.io_pct / 100 * sum.evidence.step_mean_ms, 1e-9);
}

// FETCH as channel.py packs it (`<iiqqq`): worker id, padding, samples, getitem ns, collate ns.
std::string fetch_rec(uint32_t pid, uint32_t seq, int64_t samples, int64_t getitem_ns, int64_t collate_ns) {
  std::string p(32, '\0');
  int32_t id = 0;
  std::memcpy(p.data(), &id, 4);
  std::memcpy(p.data() + 8, &samples, 8);
  std::memcpy(p.data() + 16, &getitem_ns, 8);
  std::memcpy(p.data() + 24, &collate_ns, 8);
  return header(4, p.size(), pid, seq) + p;
}

// A worker's first batch holds what its dataset does once per worker (a store opened on the first
// item: 150 ms here against 20 us a sample): the per-sample cost comes from the batches after it,
// and from the first ones only where no worker made a second.
TEST(AgentSummary, AWorkersFirstBatchIsNotTheSamplesCost) {
  Records r;
  RecordDecoder d(r);
  std::string s = step_rec(5, 1, 1, kStepOptimizer, 10'000'000, 0);
  for (uint32_t pid : {7u, 8u}) {
    s += fetch_rec(pid, 1, 8, 150'000'000 + 8 * 20'000, 200'000);
    for (uint32_t k = 2; k <= 4; ++k) s += fetch_rec(pid, k, 8, 8 * 20'000, 200'000);
  }
  d.feed(s);
  auto sum = summarise(r);
  EXPECT_NEAR(sum.evidence.sample_getitem_ms, 0.020, 1e-9);
  EXPECT_NEAR(sum.evidence.collate_ms, 0.2, 1e-9);

  Records only_firsts;
  RecordDecoder d2(only_firsts);
  d2.feed(step_rec(5, 1, 1, kStepOptimizer, 10'000'000, 0) + fetch_rec(7, 1, 8, 8 * 30'000, 100'000));
  EXPECT_NEAR(summarise(only_firsts).evidence.sample_getitem_ms, 0.030, 1e-9);
}

TEST(AgentSummary, NoRecordsMeansTheAgentDidNotLoad) {
  Records r;
  auto sum = summarise(r);
  EXPECT_FALSE(sum.agent_loaded);
  ASSERT_EQ(sum.evidence.notes.size(), 1u);
  EXPECT_NE(sum.evidence.notes[0].find("did not load"), std::string::npos);
}

}  // namespace
}  // namespace ts::run

namespace ts::run {
namespace {

std::string gpu_rec(uint32_t pid, uint32_t seq, int64_t step, int64_t gpu_ns) {
  int64_t v[2] = {step, gpu_ns};
  std::string p(16, '\0');
  std::memcpy(p.data(), v, 16);
  return header(3, p.size(), pid, seq) + p;
}

TEST(LongRuns, TotalsCountEveryStepWhileTheSampleStaysBounded) {
  // 10,000 optimizer steps: 5 ms each except every 10th (50 ms), 1 ms data wait each, RSS
  // growing 1 KiB per step, a GPU time after each step, steps 100-104 profiled.
  constexpr int64_t N = 10'000;
  Records r;
  RecordDecoder dec(r);
  std::vector<StepRecord> fresh;
  uint32_t seq = 0;
  for (int64_t i = 1; i <= N; ++i) {
    int64_t flags = kStepOptimizer | (i >= 100 && i <= 104 ? kStepProfiled : 0);
    std::string b = step_rec(9, ++seq, i, flags, i % 10 == 0 ? 50'000'000 : 5'000'000, 1'000'000,
                             1'000'000'000 + i * 1024);
    b += gpu_rec(9, ++seq, i, 4'000'000);
    dec.feed(b, &fresh);
  }
  EXPECT_EQ(fresh.size(), static_cast<size_t>(N));  // the live views still see every step
  // The sample: 200 head steps, at most kStepsSample + 1 more: bounded, whatever N.
  EXPECT_LE(r.steps.size(), static_cast<size_t>(kStepsHead + kStepsSample + 1));
  EXPECT_GT(r.steps.size(), static_cast<size_t>(kStepsHead + kStepsSample / 2 - 1));
  EXPECT_EQ(r.steps.front().step, 1);
  // Evenly spread past the head: consecutive kept steps are one stride apart (the stride being
  // the largest power of two that kept the tail under kStepsSample: 9,800 tail steps -> 8).
  const StepTotals& t = r.step_totals.at({9, static_cast<int>(StepSource::Optimizer)});
  EXPECT_EQ(t.count, N);
  EXPECT_EQ(t.stride, 8);
  for (size_t i = kStepsHead + 1; i < r.steps.size(); ++i) EXPECT_EQ(r.steps[i].step - r.steps[i - 1].step, 8);
  for (const auto& s : r.steps) EXPECT_EQ(s.gpu_ns, 4'000'000) << "step " << s.step;  // joined on arrival
  EXPECT_TRUE(r.gpu.empty());  // nothing left waiting: unsampled steps' GPU times are dropped

  AgentSummary a = summarise(r);
  const auto& e = a.evidence;
  EXPECT_EQ(e.steps, N);
  EXPECT_DOUBLE_EQ(e.step_ms, 5.0);  // 9 in 10 steps take 5 ms
  // Ratio of sums over the steady steps 3..10000 (warm-up 2; the profiled steps 100-104 left out,
  // 100 being a 50 ms step): 9,993 steps, of which 999 take 50 ms (10, 20, ..., 10000 but 100):
  // sum_dur = 999 x 50 + 8,994 x 5 = 49,950 + 44,970 = 94,920 ms; data wait 9,993 x 1 ms.
  EXPECT_NEAR(e.data_wait_pct, 100.0 * 9993 / 94920, 1e-9);
  EXPECT_DOUBLE_EQ(e.mem_slope_bytes_per_step, 1024.0);  // against step numbers, not sample indexes
  EXPECT_DOUBLE_EQ(e.mem_peak_bytes, 1'000'000'000.0 + N * 1024);  // the last step's RSS, sampled or not
}

TEST(LongRuns, SparseCudaReadingsAreAllKeptApartFromTheStepSample) {
  // The agent reads the CUDA allocator at most every 50 ms (step_path.py), not every step: here
  // every 13th of 20,000 steps carries a reading (allocated growing 4 KiB per step, the peak
  // 1 GiB above it). 13 is prime to the sample's power-of-two stride, so the step sample keeps
  // almost none of them past its head; the readings must survive on their own.
  constexpr int64_t N = 20'000;
  Records r;
  RecordDecoder dec(r);
  uint32_t seq = 0;
  int64_t readings = 0;
  for (int64_t i = 1; i <= N; ++i) {
    bool read = i % 13 == 0;
    readings += read;
    int64_t alloc = read ? 500'000'000 + i * 4096 : -1;
    dec.feed(step_rec(4, ++seq, i, kStepOptimizer, 3'000'000, 0, 100, alloc, read ? alloc + (1 << 30) : -1));
  }
  ASSERT_EQ(readings, 1538);
  EXPECT_EQ(r.mem.size(), static_cast<size_t>(readings));  // under kMemPoints: every reading
  size_t sampled = 0;
  for (const auto& s : r.steps) sampled += s.mem_allocated >= 0;
  EXPECT_LT(sampled, r.mem.size() / 4);  // what the step sample alone would have kept

  AgentSummary a = summarise(r);
  const auto& e = a.evidence;
  EXPECT_EQ(e.mem_source, "cuda");
  EXPECT_EQ(e.mem_allocated_per_step.size(), static_cast<size_t>(readings));
  EXPECT_DOUBLE_EQ(e.mem_slope_bytes_per_step, 4096.0);  // per step, from the readings' step numbers
  EXPECT_DOUBLE_EQ(e.mem_peak_bytes, 500'000'000.0 + 19'994 * 4096 + (1 << 30));  // the last reading's peak
  EXPECT_DOUBLE_EQ(e.mem_reserved_bytes, 2 * (500'000'000.0 + 19'994 * 4096));

  // Past kMemPoints the readings are thinned to every other one, still spanning the run.
  Records big;
  RecordDecoder dec2(big);
  for (int64_t i = 1; i <= 3 * static_cast<int64_t>(kMemPoints); ++i)
    dec2.feed(step_rec(4, static_cast<uint32_t>(i), i, kStepOptimizer, 3'000'000, 0, 100, 1000 + i, 2000 + i));
  EXPECT_LE(big.mem.size(), kMemPoints);
  EXPECT_GT(big.mem.size(), kMemPoints / 2);
  EXPECT_EQ(big.mem.front().step, 1);
  EXPECT_GT(big.mem.back().step, 2 * static_cast<int64_t>(kMemPoints));
}

TEST(LongRuns, TextRecordsAreCappedAndCounted) {
  Records r;
  RecordDecoder dec(r);
  std::vector<TextRecord> fresh;
  for (uint32_t i = 1; i <= kMaxTexts + 5; ++i) dec.feed(text_rec(3, i, "kind=note\nmsg=x"), nullptr, &fresh);
  EXPECT_EQ(r.texts.size(), kMaxTexts);
  EXPECT_EQ(r.texts_dropped, 5u);
  EXPECT_EQ(fresh.size(), kMaxTexts + 5);
}

// A process that died after its script returned: its agent's exit record came, with no uncaught
// exception, and a crash signal (not one sent from outside) then ended it.
TEST(DiedAtExit, OnlyACrashSignalAfterTheScriptReturned) {
  auto end = [](pid_t pid, const char* uncaught, const char* reason = "exit") {
    TextRecord t;
    t.pid = pid;
    t.kind = "end";
    t.kv = {{"uncaught", uncaught}, {"reason", reason}};
    return t;
  };
  const std::vector<std::string> none;
  EXPECT_TRUE(died_at_exit(40, 6, none, {end(40, "")}));
  EXPECT_TRUE(died_at_exit(40, 11, none, {end(41, "ValueError"), end(40, "")}));
  EXPECT_FALSE(died_at_exit(40, 6, none, {end(40, "RuntimeError")}));  // it raised: a failure in the script
  EXPECT_FALSE(died_at_exit(40, 6, none, {}));                         // no exit record: died mid-run
  EXPECT_FALSE(died_at_exit(40, 6, none, {end(41, "")}));              // another process's record
  EXPECT_FALSE(died_at_exit(40, 15, none, {end(40, "")}));             // SIGTERM: sent from outside
  EXPECT_FALSE(died_at_exit(40, 0, none, {end(40, "")}));              // an exit status: the script's own
  // torchrun: the root-cause rank's pid and signal from its summary (recorded stderr, pid 12698).
  const auto tail = ts::test::file_lines(std::string(TS_SOURCE_DIR) + "/tests/data/stderr/torchrun_rank_aborted.txt");
  ASSERT_FALSE(tail.empty());
  EXPECT_TRUE(died_at_exit(100, 0, tail, {end(12699, ""), end(12698, "")}));
  EXPECT_FALSE(died_at_exit(100, 0, tail, {end(12699, "")}));
}

TEST(Slopes, RobustSlopeIgnoresAOneOffJumpButSeesALeak) {
  std::vector<double> jump, leak;
  for (int i = 0; i < 40; ++i) {
    jump.push_back(100e6 + (i >= 12 ? 30e6 : 0));  // the profiler window's buffers, once
    leak.push_back(100e6 + 2e6 * i);
  }
  EXPECT_GT(slope(jump), 0.5e6);  // least squares reads the jump as growth
  EXPECT_EQ(robust_slope(jump), 0.0);
  EXPECT_DOUBLE_EQ(robust_slope(leak), 2e6);
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
}

}  // namespace
}  // namespace ts::run

namespace ts::run {
namespace {

// RSS of a real run (examples/launch_bound.py, 30 steps, window 10-14): flat, a rise during the
// profiler window, flat again. Not growth.
TEST(Slopes, ProfilerWindowRiseIsNotGrowth) {
  std::vector<double> mb = {248.6, 249.1, 249.2, 249.2, 249.3, 249.3, 249.3, 249.3, 249.3, 251.2,
                            252.3, 253.3, 254.3, 255.3, 318.5, 318.5, 318.5, 318.5, 318.5, 318.5,
                            318.5, 318.5, 318.5, 318.5, 318.5, 318.5, 318.5, 318.5, 318.5, 318.5};
  std::vector<double> y;
  std::vector<int> seg;
  for (size_t i = 0; i < mb.size(); ++i) {
    y.push_back(mb[i] * 1e6);
    seg.push_back(i < 2 ? -1 : (i >= 9 && i <= 14) ? -1 : (i < 9 ? 0 : 1));
  }
  EXPECT_GT(robust_slope(std::vector<double>(y.begin() + 2, y.end())), 1e5);  // one segment: fooled
  EXPECT_LT(std::abs(robust_slope(y, seg)), 1e4);
}

}  // namespace
}  // namespace ts::run
