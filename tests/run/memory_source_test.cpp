// Which memory the CPU run's leak test reads: the agent's step records carry the process RSS and
// the C heap's in-use bytes (agent heap.py); the summary takes the heap, the rule falls back to
// the RSS. On real readings (tests/data/memory/growing_memory_cpu.csv: examples/growing_memory.py,
// which keeps two 256 x 2048 fp32 tensors, 4 MiB, per step, beside two busy loops) and on the
// shape the heap cannot see (Python's own small objects, in pymalloc's mmapped arenas).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "diagnose/diagnose.h"
#include "diagnose/growth_trend.h"
#include "run/agent_records.h"
#include "run/agent_summary.h"
#include "run/record_bytes.h"

namespace ts::run {
namespace {

constexpr double MiB = 1024.0 * 1024;

// A STEP record with the heap fields (32 fields, channel.py's STEP); heap_free -1: not read.
std::string step_rec(uint32_t seq, int64_t step, int64_t flags, int64_t rss, int64_t heap, int64_t heap_free) {
  std::array<int64_t, 32> f = {};
  f[0] = step, f[1] = flags, f[3] = 10'000'000;
  f[18] = f[19] = f[20] = -1;  // no CUDA
  f[21] = rss;
  f[28] = 1, f[29] = 1;
  f[30] = heap;
  f[31] = heap_free;
  return test::step_record(11, seq, f);
}

struct Reading { int64_t step, flags, rss, heap, heap_free = -1; };

std::vector<Reading> recorded() {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/tests/data/memory/growing_memory_cpu.csv");
  std::vector<Reading> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Reading r{};
    char c;
    std::istringstream(line) >> r.step >> c >> r.flags >> c >> r.rss >> c >> r.heap;
    out.push_back(r);
  }
  return out;
}

diagnose::Evidence evidence_of(const std::vector<Reading>& rs) {
  Records rec;
  RecordDecoder d(rec);
  uint32_t seq = 1;
  d.feed(test::text_rec(11, seq++, "kind=hello\npython=3.11.7"));
  for (const auto& r : rs) d.feed(step_rec(seq++, r.step, r.flags, r.rss, r.heap, r.heap_free));
  diagnose::Evidence ev;
  auto sum = summarise(rec);
  sum.evidence.host_mem_total_bytes = 24.0 * 1024 * MiB;
  ev.agent = sum.evidence;
  return ev;
}

TEST(MemorySource, TheHeapCarriesTheRecordedLeakAtTheScriptsRate) {
  auto rs = recorded();
  ASSERT_EQ(rs.size(), 40u) << "tests/data/memory/growing_memory_cpu.csv";
  auto ev = evidence_of(rs);
  EXPECT_EQ(ev.agent->mem_source, "heap");
  ASSERT_EQ(ev.agent->mem_rss_per_step.size(), ev.agent->mem_allocated_per_step.size());
  // The script keeps x * scale and its ReLU: 2 x 256 x 2048 x 4 bytes = 4 MiB per step.
  EXPECT_NEAR(ev.agent->mem_slope_bytes_per_step / MiB, 4.0, 0.1);
  auto d = diagnose::diagnose(ev);
  ASSERT_FALSE(d.findings.empty());
  const auto& f = d.findings.front();
  EXPECT_EQ(f.id, "memory-growth");
  EXPECT_NE(f.explanation.find("C heap"), std::string::npos) << f.explanation;
  // The RAM fills by the RSS (the last reading), not by the heap's smaller figure.
  double left = -1;
  for (const auto& e : f.evidence)
    if (e.name == "steps_until_full") left = e.value;
  double slope = ev.agent->mem_slope_bytes_per_step;
  EXPECT_NEAR(left, (24.0 * 1024 * MiB - double(rs.back().rss)) / slope, 0.05 * left);
}

// The agent reads the RSS at most every 10 ms and the heap at most every 10 ms and 1% of wall time;
// a step between readings carries the last RSS and no heap (and its CPU clock field, -1, says so).
// Under load one heap reading was preempted, counted 100x its cost, and the next came 25 steps
// later: the carried values flattened a 24 MiB-a-step leak to 14.4 (tests/run/oom_kill_test.sh).
// Only readings make the trend: a 3 MiB-a-step rise read at steps 1-4, then every 6th step, has
// its slope exactly.
TEST(MemorySource, OnlyTheStepsThatReadMemoryMakeItsTrend) {
  Records rec;
  RecordDecoder d(rec);
  uint32_t seq = 1;
  d.feed(test::text_rec(11, seq++, "kind=hello\npython=3.11.7"));
  int64_t rss = 0, read_at = 0;
  for (int64_t s = 1; s <= 60; ++s) {
    std::array<int64_t, 33> f = {};
    f[0] = s, f[1] = 9, f[3] = 10'000'000;
    f[18] = f[19] = f[20] = -1;  // no CUDA
    f[28] = 1, f[29] = 1;
    const bool reads = s <= 4 || s % 6 == 0;
    if (reads) rss = int64_t(400 * MiB) + s * int64_t(3 * MiB), read_at = s;
    f[21] = rss;  // carried over between readings
    f[30] = reads ? int64_t(100 * MiB) + s * int64_t(3 * MiB) : -1;
    f[31] = reads ? int64_t(2 * MiB) : -1;
    f[32] = reads ? 1'000'000 * s : -1;
    d.feed(test::step_record(11, seq++, f));
  }
  ASSERT_EQ(read_at, 60);
  auto sum = summarise(rec);
  sum.evidence.host_mem_total_bytes = 24.0 * 1024 * MiB;
  const auto& a = sum.evidence;
  EXPECT_EQ(a.mem_source, "heap");
  ASSERT_EQ(a.mem_at_step.size(), 4u + 10u);  // steps 1-4, 6, 12, ..., 60
  EXPECT_EQ(a.mem_at_step[4], 6);
  EXPECT_DOUBLE_EQ(a.mem_slope_bytes_per_step / MiB, 3.0);
  diagnose::Evidence ev;
  ev.agent = a;
  auto dg = diagnose::diagnose(ev);
  ASSERT_FALSE(dg.findings.empty());
  EXPECT_EQ(dg.findings.front().id, "memory-growth");
  for (const auto& e : dg.findings.front().evidence) {
    if (e.name == "growth_bytes_per_step") {
      EXPECT_DOUBLE_EQ(e.value / MiB, 3.0);
    }
  }
}

TEST(MemorySource, RssGrowthTheHeapDoesNotSeeIsStillFound) {
  // Python objects kept every step (pymalloc's arenas are mmapped outside the C heap): the heap
  // stays flat within its noise, the RSS rises 1 MiB a step.
  std::vector<Reading> rs;
  for (int s = 1; s <= 60; ++s)
    rs.push_back({s, 9 | (s >= 10 && s <= 15 ? 2 : 0), int64_t(300 * MiB + s * MiB + (s % 3) * 4096),
                  int64_t(120 * MiB + (s % 5) * 8192)});
  auto ev = evidence_of(rs);
  EXPECT_EQ(ev.agent->mem_source, "heap");
  auto d = diagnose::diagnose(ev);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().id, "memory-growth");
  EXPECT_NE(d.findings.front().explanation.find("(RSS)"), std::string::npos) << d.findings.front().explanation;
}

TEST(MemorySource, PythonObjectsKeptAreFoundBesideTheHeapsFreeBytes) {
  // The same leak where the agent also read the heap's free bytes (flat here): the RSS less them
  // still rises 1 MiB a step.
  std::vector<Reading> rs;
  for (int s = 1; s <= 60; ++s)
    rs.push_back({s, 9, int64_t(300 * MiB + s * MiB + (s % 3) * 4096), int64_t(120 * MiB + (s % 5) * 8192),
                  int64_t(6 * MiB + (s % 4) * 16384)});
  auto ev = evidence_of(rs);
  ASSERT_EQ(ev.agent->mem_rss_used_per_step.size(), ev.agent->mem_rss_per_step.size());
  EXPECT_DOUBLE_EQ(ev.agent->mem_rss_used_per_step.back(), double(rs.back().rss - rs.back().heap_free));
  auto d = diagnose::diagnose(ev);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().id, "memory-growth");
  EXPECT_NE(d.findings.front().explanation.find("less the C heap's free bytes"), std::string::npos)
      << d.findings.front().explanation;
}

TEST(MemorySource, MemoryTheHeapHoldsFreeIsNotALeak) {
  // The shape of examples/checkpoint_every_step.py's rare false alarm: an 8 MB torch.save every
  // step; glibc keeps the freed blocks and now and then grows its arena by one more (4 MiB steps
  // measured here, 2026-11-28), so the RSS climbs in stairs while the heap in use stands still.
  std::vector<Reading> rs;
  int64_t held = 2 * int64_t(MiB);
  for (int s = 1; s <= 60; ++s) {
    if (s % 9 == 0) held += 4 * int64_t(MiB);
    rs.push_back({s, 9, int64_t(300 * MiB) + held + (s % 3) * 4096, int64_t(120 * MiB + (s % 5) * 8192),
                  held + (s % 2) * 8192});
  }
  auto ev = evidence_of(rs);
  // The RSS alone passes every test of a trend: without the free bytes this would be a finding.
  ASSERT_TRUE(diagnose::growth_trend(ev.agent->mem_at_step, ev.agent->mem_rss_per_step, ev.agent->mem_segment).leak);
  for (const auto& f : diagnose::diagnose(ev).findings) EXPECT_NE(f.id, "memory-growth") << f.explanation;
}

TEST(MemorySource, NeitherGrowingIsSilent) {
  std::vector<Reading> rs;
  for (int s = 1; s <= 60; ++s)
    rs.push_back({s, 9, int64_t(300 * MiB + (s % 3) * 4096), int64_t(120 * MiB + (s % 5) * 8192)});
  auto d = diagnose::diagnose(evidence_of(rs));
  for (const auto& f : d.findings) EXPECT_NE(f.id, "memory-growth");
}

TEST(MemorySource, OlderAgentsRecordsReadTheRss) {
  Records rec;
  RecordDecoder d(rec);
  std::string p(30 * 8, '\0');  // a step record without the heap field
  int64_t f[22] = {1, 9};
  f[18] = f[19] = f[20] = -1, f[21] = int64_t(300 * MiB);  // no CUDA, the RSS
  std::memcpy(p.data(), f, sizeof f);
  d.feed(test::header(2, p.size(), 11, 1) + p);
  ASSERT_EQ(rec.steps.size(), 1u);
  EXPECT_EQ(rec.steps[0].heap, -1);
  EXPECT_EQ(rec.steps[0].heap_free, -1);
  EXPECT_EQ(summarise(rec).evidence.mem_source, "rss");
}

}  // namespace
}  // namespace ts::run
