// Fresh shared memory's cost per MiB on this machine (sample/shm_fault_cost.h): the measurement
// runs, and its parts hold together. The figures themselves are timings and are not asserted;
// docs/BENCHMARKS.md has them beside bench/loader/worker_collate_bench.py's.
#include <gtest/gtest.h>

#include <algorithm>

#include "sample/shm_fault_cost.h"

namespace ts::sample {
namespace {

TEST(ShmFaultCost, MeasuresFreshAgainstWarmPages) {
  ShmFaultCost c = measure_shm_fault_cost(4, 3);
  ASSERT_GT(c.fresh_ms_per_mib, 0) << "memfd_create or mmap refused";
  ASSERT_GT(c.warm_ms_per_mib, 0);
  EXPECT_GE(c.ms_per_mib, 0);
  // The extra is the fastest fresh write less the fastest warm one, never below 0.
  EXPECT_DOUBLE_EQ(c.ms_per_mib, std::max(0.0, c.fresh_ms_per_mib - c.warm_ms_per_mib));
}

TEST(ShmFaultCost, NothingToMeasureIsUnknown) {
  EXPECT_EQ(measure_shm_fault_cost(0, 3).ms_per_mib, -1);
  EXPECT_EQ(measure_shm_fault_cost(4, 0).ms_per_mib, -1);
}

}  // namespace
}  // namespace ts::sample
