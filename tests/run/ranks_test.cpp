// Multi-process jobs on records built byte by byte as channel.py packs them: pid -> rank from the
// hello records (the torchrun launcher, which has no RANK, is left out), per-rank medians,
// the straggler from backward times, the newer step layout with comm_ns, and one live-status
// file per rank.
#include <gtest/gtest.h>
#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run/agent_records.h"
#include "run/record_bytes.h"
#include "run/live_status.h"
#include "run/rank_summary.h"

namespace ts::run {
namespace {

using test::header;
using test::text_rec;

// STEP "<25qdqq": dur, data wait, forward, backward, optimizer, comm (ms).
std::string rank_step_rec(uint32_t pid, uint32_t seq, int64_t step, double dur, double data, double fwd, double bwd,
                     double opt, double comm) {
  auto ns = [](double ms) { return static_cast<int64_t>(ms * 1e6); };
  int64_t f[25] = {};
  f[0] = step;
  f[1] = kStepOptimizer;
  f[2] = step * ns(dur);
  f[3] = ns(dur);
  f[4] = ns(data);
  f[11] = ns(fwd);
  f[12] = ns(bwd);
  f[13] = ns(opt);
  f[18] = -1, f[19] = -1, f[20] = -1;
  f[21] = 1000 * step;
  f[22] = 32;
  std::string p(28 * 8, '\0');
  std::memcpy(p.data(), f, sizeof f);
  int64_t tail[2] = {ns(comm), comm > 0 ? 1 : 0};
  std::memcpy(p.data() + 26 * 8, tail, sizeof tail);
  return header(2, p.size(), pid, seq) + p;
}

// Two ranks of a DDP job plus the launcher: rank 1 waits 30 ms more for data, rank 0 spends
// those 30 ms inside backward (the all-reduce). 12 steps each; step 5 is profiled (left out).
Records ddp_records() {
  std::string s = text_rec(100, 1, "kind=hello\npython=3.11.2\nlauncher=1");  // torchrun: no RANK
  s += text_rec(101, 1, "kind=hello\nrank=0\nlocal_rank=0\nworld_size=2");
  s += text_rec(102, 1, "kind=hello\nrank=1\nlocal_rank=1\nworld_size=2");
  uint32_t seq0 = 1, seq1 = 1;
  for (int i = 1; i <= 12; ++i) {
    std::string r0 = rank_step_rec(101, ++seq0, i, 100, 1, 20, 70, 5, 0);
    std::string r1 = rank_step_rec(102, ++seq1, i, 100, 31, 20, 40, 5, 2);
    if (i == 5) {  // profiled: far off, must not move the medians
      r0 = rank_step_rec(101, seq0, i, 900, 1, 20, 70, 5, 0);
      r0[16 + 8] = kStepOptimizer | kStepProfiled;
      r1 = rank_step_rec(102, seq1, i, 900, 31, 20, 40, 5, 2);
      r1[16 + 8] = kStepOptimizer | kStepProfiled;
    }
    s += r0 + r1;
  }
  Records r;
  RecordDecoder d(r);
  d.feed(s);
  return r;
}

TEST(Ranks, PidToRankFromHelloLauncherLeftOut) {
  Records r = ddp_records();
  auto procs = rank_processes(r);
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs.at(101).rank, 0);
  EXPECT_EQ(procs.at(102).rank, 1);
  EXPECT_EQ(procs.at(102).local_rank, 1);
  EXPECT_EQ(procs.at(102).world_size, 2);
  EXPECT_EQ(procs.count(100), 0u);
}

TEST(Ranks, CommDecodedFromTheNewerStepLayout) {
  Records r = ddp_records();
  ASSERT_EQ(r.steps.size(), 24u);
  EXPECT_EQ(r.steps[1].pid, 102);
  EXPECT_EQ(r.steps[1].comm_ns, 2'000'000);
  EXPECT_EQ(r.steps[1].comm_count, 1);
  EXPECT_EQ(r.steps[0].comm_ns, 0);
}

TEST(Ranks, PerRankMediansAndTheStraggler) {
  auto ev = summarise_ranks(ddp_records());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->source, "agent");
  ASSERT_EQ(ev->ranks.size(), 2u);
  const auto& a = ev->ranks[0];
  const auto& b = ev->ranks[1];
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(a.pid, 101);
  EXPECT_EQ(b.pid, 102);
  EXPECT_EQ(a.steps, 12);
  EXPECT_NEAR(a.step_ms, 100, 1e-6);  // the profiled 900 ms step is left out
  EXPECT_NEAR(b.data_wait_ms, 31, 1e-6);
  EXPECT_NEAR(a.backward_ms, 70, 1e-6);
  EXPECT_NEAR(b.comm_ms, 2, 1e-6);
  // sync: rank 0 = 70 (backward), rank 1 = 40 + 2; busy = (step - sync) + min sync (42):
  // rank 0 = 30 + 42 = 72, rank 1 = 58 + 42 = 100; rank 0 waits 28 ms.
  EXPECT_NEAR(a.busy_ms, 72, 1e-6);
  EXPECT_NEAR(b.busy_ms, 100, 1e-6);
  EXPECT_NEAR(a.wait_ms, 28, 1e-6);
  EXPECT_NEAR(b.wait_ms, 0, 1e-6);
  EXPECT_EQ(ev->straggler_rank, 1);  // 100 > 1.1 x 86
  EXPECT_TRUE(b.straggler);
  EXPECT_NEAR(ev->median_busy_ms, 86, 1e-6);
  EXPECT_NEAR(ev->straggler_gap_ms, 14, 1e-6);
}

TEST(Ranks, SingleProcessHasNoRankTable) {
  std::string s = text_rec(7, 1, "kind=hello\npython=3.11.2");
  for (int i = 1; i <= 5; ++i) s += rank_step_rec(7, 1 + i, i, 10, 1, 2, 3, 1, 0);
  Records r;
  RecordDecoder d(r);
  d.feed(s);
  EXPECT_FALSE(summarise_ranks(r).has_value());
}

std::string file_text(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Ranks, LiveStatusOneFilePerRank) {
  char tmpl[] = "/tmp/ts_live_ranks_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  Records r = ddp_records();
  std::string r0, r1;
  {
    LiveStatusWriter w(dir, 100, "torchrun x.py", 1700000000);
    // A step before any hello: the single-process file first...
    w.on_step(r.steps[0]);
    w.write(1700000001);
    EXPECT_TRUE(std::filesystem::exists(w.path()));
    for (const auto& t : r.texts) w.on_text(t);
    for (const auto& s : r.steps) w.on_step(s);
    w.write(1700000002);
    std::string base = dir + "/" + std::to_string(getpid());
    r0 = file_text(base + "-r0.json");
    r1 = file_text(base + "-r1.json");
    // ...replaced by the rank files once the ranks said hello.
    EXPECT_FALSE(std::filesystem::exists(w.path()));
  }
  EXPECT_NE(r0.find("\"rank\":0"), std::string::npos) << r0;
  EXPECT_NE(r0.find("\"child_pid\":101"), std::string::npos) << r0;
  EXPECT_NE(r1.find("\"rank\":1"), std::string::npos) << r1;
  EXPECT_NE(r1.find("\"local_rank\":1"), std::string::npos);
  EXPECT_NE(r1.find("\"world_size\":2"), std::string::npos);
  EXPECT_NE(r1.find("\"steps_total\":12"), std::string::npos) << r1;
  EXPECT_NE(r0.find("\"steps_total\":13"), std::string::npos) << r0;  // one step fed twice above
  // Removed at the end.
  size_t left = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++left;  // tmp files too
  EXPECT_EQ(left, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ts::run
