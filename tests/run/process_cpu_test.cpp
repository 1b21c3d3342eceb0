// The training process's CPU per steady step (evidence.h process_cpu_ms) from the CPU clock the
// agent reads at most every 10 ms at a step's end (step_path.py; -1 on the steps between): the
// clock's rise over the steps between two readings, over unprofiled steady steps only.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "run/agent_records.h"
#include "run/agent_summary.h"
#include "run/record_bytes.h"

namespace ts::run {
namespace {

struct Step { int64_t step, flags, cpu_ns; };

// Steps of 10 ms wall time each; the records' other fields as a CPU-only agent sends them.
double process_cpu_ms(const std::vector<Step>& steps, size_t fields = 33) {
  Records rec;
  RecordDecoder d(rec);
  uint32_t seq = 1;
  d.feed(test::text_rec(11, seq++, "kind=hello\npython=3.11.7"));
  for (const auto& s : steps) {
    std::array<int64_t, 33> f = {};
    f[0] = s.step, f[1] = s.flags | kStepOptimizer, f[3] = 10'000'000;
    f[18] = f[19] = f[20] = -1;
    f[28] = f[29] = 1;
    f[30] = f[31] = -1;
    f[32] = s.cpu_ns;
    d.feed(test::step_record(11, seq++, f, 0.5, fields));
  }
  return summarise(rec).evidence.process_cpu_ms;
}

// A reading every third step, 3 ms of CPU per step after a costly first step.
std::vector<Step> every_third(int64_t steps, int64_t ms_per_step) {
  std::vector<Step> out;
  int64_t cpu = 2'000'000'000;  // the imports before the loop
  for (int64_t i = 1; i <= steps; ++i) {
    cpu += i == 1 ? 900'000'000 : ms_per_step * 1'000'000;
    out.push_back({i, 0, i % 3 == 0 ? cpu : -1});
  }
  return out;
}

TEST(ProcessCpu, TheClocksRiseOverTheStepsBetweenReadings) {
  EXPECT_NEAR(process_cpu_ms(every_third(30, 3)), 3.0, 1e-9);
}

TEST(ProcessCpu, ProfiledAndWorkerStartingStepsAreLeftOut) {
  auto steps = every_third(30, 3);
  // The profiler's steps cost 20 ms of CPU more each, a worker start 50 ms: neither is the loop's.
  for (auto& s : steps) {
    if (s.step >= 10 && s.step <= 14) s.flags |= kStepProfiled;
    if (s.step == 22) s.flags |= kStepWorkers;
  }
  int64_t extra = 0;
  for (auto& s : steps) {
    if (s.flags & kStepProfiled) extra += 20'000'000;
    if (s.flags & kStepWorkers) extra += 50'000'000;
    if (s.cpu_ns >= 0) s.cpu_ns += extra;
  }
  EXPECT_NEAR(process_cpu_ms(steps), 3.0, 1e-9);
}

TEST(ProcessCpu, UnknownWithoutTwoSteadyReadingsOrFromAnOlderAgent) {
  EXPECT_LT(process_cpu_ms(every_third(4, 3)), 0);  // one reading after warm-up
  EXPECT_LT(process_cpu_ms(every_third(30, 3), 32), 0);  // its records end before the clock
}

}  // namespace
}  // namespace ts::run
