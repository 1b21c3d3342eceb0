// memory-growth's trend test (growth_trend.h) on readings shaped like the process RSS of real
// loops: a steady leak stands out of its noise at any size that matters over a run; warm-up, a
// cache that fills once and allocator noise do not. The noise is a fixed pseudo-random sequence
// (page-sized jitter as glibc's heap and PyTorch's CPU allocator give it), so the test is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"
#include "diagnose/growth_trend.h"

namespace ts::diagnose {
namespace {

constexpr double MiB = 1024.0 * 1024;

struct Series {
  std::vector<double> x, y;
  std::vector<int> seg;
};

// Readings every other step from step 3 on (the agent reads RSS at most every 10 ms), base 300 MiB,
// jitter up to +-amp bytes.
Series make(int steps, double slope_bytes, double amp, double (*extra)(int) = nullptr) {
  Series s;
  uint32_t r = 12345;
  for (int step = 3; step <= steps; step += 2) {
    r = r * 1103515245u + 12345u;
    double jitter = ((r >> 8) % 2001 / 1000.0 - 1.0) * amp;
    s.x.push_back(step);
    s.y.push_back(300 * MiB + slope_bytes * step + jitter + (extra ? extra(step) : 0));
    s.seg.push_back(0);
  }
  return s;
}

// The agent's evidence of a run whose memory readings are `s` (source "rss" or "heap"), on a host
// of 24 GiB.
AgentEvidence agent_reading(const Series& s, int64_t steps, double step_ms, const char* source) {
  AgentEvidence a;
  a.steps = steps;
  a.step_ms = step_ms;
  a.mem_source = source;
  a.mem_allocated_per_step = s.y;
  a.mem_at_step = s.x;
  a.mem_segment = s.seg;
  a.mem_peak_bytes = s.y.back();
  a.host_mem_total_bytes = 24.0 * 1024 * MiB;
  return a;
}

TEST(GrowthTrend, FindsSmallSteadyLeaksAboveTheirNoise) {
  for (double per_step : {0.2 * MiB, 0.5 * MiB, 2 * MiB}) {
    Series s = make(300, per_step, 2 * MiB);
    GrowthTrend g = growth_trend(s.x, s.y, s.seg);
    EXPECT_TRUE(g.leak) << per_step / MiB << " MiB/step: grown " << g.grown / MiB << " noise " << g.noise / MiB;
    EXPECT_NEAR(g.slope / per_step, 1.0, 0.1);
  }
}

TEST(GrowthTrend, NoiseWarmUpAndACacheThatFillsOnceAreNoLeak) {
  Series flat = make(300, 0, 4 * MiB);
  EXPECT_FALSE(growth_trend(flat.x, flat.y, flat.seg).leak);
  // A cache that fills over the first 60 steps (1 MiB each), then stays.
  Series cache = make(300, 0, 1 * MiB, [](int step) { return (step < 60 ? step : 60) * 1.0 * MiB; });
  GrowthTrend g = growth_trend(cache.x, cache.y, cache.seg);
  EXPECT_FALSE(g.leak) << "tail slope " << g.tail_slope / MiB << " of " << g.slope / MiB;
  // Too small to matter within the noise: 4 KiB per step over 300 steps under 2 MiB of jitter.
  Series tiny = make(300, 4096, 2 * MiB);
  EXPECT_FALSE(growth_trend(tiny.x, tiny.y, tiny.seg).leak);
  // Too few steps to call it a trend.
  Series short_run = make(15, 2 * MiB, 0.1 * MiB);
  EXPECT_FALSE(growth_trend(short_run.x, short_run.y, short_run.seg).leak);
}

TEST(GrowthTrend, AOneOffJumpBetweenSegmentsIsNotGrowth) {
  // The profiler window raises RSS by 80 MiB once (its buffers): readings before and after it are
  // separate segments; flat within each.
  Series s = make(300, 0, 1 * MiB, [](int step) { return step > 120 ? 80 * MiB : 0.0; });
  for (size_t i = 0; i < s.x.size(); ++i) s.seg[i] = s.x[i] > 120 ? 1 : 0;
  EXPECT_FALSE(growth_trend(s.x, s.y, s.seg).leak);
}

TEST(GrowthTrend, TheRuleSaysWhatTheLeakReachesAndNamesItsLine) {
  Series s = make(300, 0.5 * MiB, 2 * MiB);
  Evidence ev;
  AgentEvidence a = agent_reading(s, 300, 10, "rss");
  CodeSite leak = test::code_site("leak", "/work/proj/train.py", 42);
  leak.code = "history.append(loss)";
  leak.detail = "history (a local of train()) keeps 1 more tensor per step";
  a.sites.push_back(leak);
  ev.agent = a;
  Diagnosis d = diagnose(ev);
  const Finding* f = test::find(d, "memory-growth");
  ASSERT_NE(f, nullptr);
  // 0.5 MiB/step from 450 MiB at step 299: 100,000 steps reach ~49 GiB, past the 24 GiB of RAM,
  // which fills after (24 GiB - 450 MiB) / 0.5 MiB ~ 48,250 more steps.
  EXPECT_NEAR(test::ev_value(*f, "horizon_steps"), 100000, 1e-9);
  EXPECT_NEAR(test::ev_value(*f, "at_horizon_bytes") / (1024 * MiB), 49.2, 0.6);
  EXPECT_NEAR(test::ev_value(*f, "steps_until_full"), (24.0 * 1024 - 450) / 0.5, 1500);
  ASSERT_EQ(f->sites.size(), 1u);
  EXPECT_EQ(f->sites[0].path, "train.py");
  EXPECT_EQ(f->sites[0].line, 42);
  EXPECT_EQ(f->sites[0].note, leak.detail);
}

// A job the kernel's OOM killer ended after 16 steps (tests/mo's measured case: a loop keeping 64
// MiB a step in a 900 MiB memory cgroup, /proc/vmstat's oom_kill +1): its rise is the cause,
// though too short for a leak of a run that went on (kGrowthMinSpanSteps). The same readings from
// a job killed by a plain SIGKILL (a scheduler, the user), with no OOM kill counted, stay silent.
TEST(GrowthTrend, AJobTheOomKillerEndedHasItsShortRiseNamedAsTheCause) {
  // A reading at every step from step 3 (steps of 13 ms, readings at most every 10 ms).
  Series s;
  for (int step = 3; step <= 16; ++step) {
    s.x.push_back(step);
    s.y.push_back(100 * MiB + 58 * MiB * (step - 3) + (step % 3) * MiB);
    s.seg.push_back(0);
  }
  Evidence ev;
  ev.agent = agent_reading(s, 16, 13, "heap");
  JobEvidence job;
  job.signal = 9;
  job.steps = 16;
  job.agent_loaded = true;
  job.oom_kills = 0;
  ev.job = job;
  Diagnosis plain_kill = diagnose(ev);
  EXPECT_EQ(test::find(plain_kill, "memory-growth"), nullptr);
  EXPECT_EQ(plain_kill.verdict.find("OOM"), std::string::npos) << plain_kill.verdict;
  EXPECT_NE(plain_kill.verdict.find("ended by signal 9 after 16 steps"), std::string::npos) << plain_kill.verdict;

  ev.job->oom_kills = 1;
  Diagnosis d = diagnose(ev);
  EXPECT_EQ(d.verdict.rfind("The job was killed by the kernel's OOM killer after 16 steps", 0), 0u) << d.verdict;
  const Finding* f = test::find(d, "memory-growth");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(test::ev_value(*f, "growth_bytes_per_step") / MiB, 58, 3);
  EXPECT_NE(f->title.find("until the kernel's OOM killer ended the job"), std::string::npos) << f->title;
  EXPECT_NE(f->gain.find("filled the memory in 16 steps"), std::string::npos) << f->gain;
}

}  // namespace
}  // namespace ts::diagnose
