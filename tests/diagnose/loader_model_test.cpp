// The DataLoader model (diagnose/loader_model.h), every expectation worked by hand from
//   period(W) = max(load / W, load x cpu_share / (cores - 1)),
//   step(W) = max(compute, period) + 2.5 ms + 0.33 ms per MiB of the batch (0 when its size is unknown).
#include <gtest/gtest.h>

#include "diagnose/loader_model.h"
#include "diagnose/thresholds.h"

namespace ts::diagnose {
namespace {

TEST(LoaderModel, HandOverIsTheMeasuredConstant) { EXPECT_DOUBLE_EQ(th::kWorkerHandoverMs, 2.5); }

// The hand-over grows with the batch: an ImageNet-style batch of 256 x 3 x 224 x 224 bytes
// (36.75 MiB) costs 2.5 + 0.33 x 36.75 = 14.6275 ms per step, not 2.5. Loading 80 ms per batch that
// computes (cpu_share 1) on 9 cores: ceil(80 / 10) + 1 = 9 wanted, 8 free cores -> 8 workers, a
// batch every max(80 / 8, 80 / 8) = 10 ms; step max(10, 10) + 14.6275 = 24.6275 ms.
TEST(LoaderModel, HandOverGrowsWithTheBatch) {
  LoaderModelInput in{90.0, 10.0, 80.0, 1.0, 9, 0};
  EXPECT_DOUBLE_EQ(handover_ms(in), 2.5);  // size unknown: the fixed part only
  in.batch_mib = 256.0 * 3 * 224 * 224 / 1048576;
  EXPECT_NEAR(handover_ms(in), 14.6275, 1e-9);
  LoaderPlan p = plan_workers(in);
  EXPECT_EQ(p.workers, 8);
  EXPECT_DOUBLE_EQ(p.period_ms, 10.0);
  EXPECT_NEAR(p.predicted_step_ms, 24.6275, 1e-9);
  EXPECT_NEAR(p.speedup, 90.0 / 24.6275, 1e-9);
}

// examples/data_starved.py's shape: 8 samples x 4 ms of sleep = 33 ms per batch, 2% of it CPU,
// 0.5 ms of compute, 2 cores. Waiting: ceil(33 / 0.5) + 1 = 67 wanted; the CPU allows
// 1 free core / 0.02 = 50, the process ceiling 16 -> 16 workers; a batch every
// max(33 / 16, 33 x 0.02 / 1) = 2.0625 ms; step 2.0625 + 2.5 = 4.5625 ms; 33.6 / 4.5625 = 7.36x.
TEST(LoaderModel, WaitingLoadingIsSizedPastTheCores) {
  LoaderModelInput in{33.6, 0.5, 33.0, 0.02, 2, 0};
  LoaderPlan p = plan_workers(in);
  EXPECT_TRUE(p.waits);
  EXPECT_EQ(p.workers, 16);
  EXPECT_EQ(p.cap, 16);
  EXPECT_NE(p.cap_reason.find("16 worker processes"), std::string::npos) << p.cap_reason;
  EXPECT_DOUBLE_EQ(p.period_ms, 2.0625);
  EXPECT_DOUBLE_EQ(p.predicted_step_ms, 4.5625);
  EXPECT_NEAR(p.speedup, 33.6 / 4.5625, 1e-12);
}

// Waiting loading whose CPU part fills the free core first: 30% CPU on 2 cores -> floor(1 / 0.3)
// = 3 workers; a batch every max(40 / 3, 40 x 0.3 / 1) = 13.33 ms; step 15.83 ms.
TEST(LoaderModel, WaitingWorkersAreCappedByTheirCpuShare) {
  LoaderModelInput in{41.0, 1.0, 40.0, 0.3, 2, 0};
  LoaderPlan p = plan_workers(in);
  EXPECT_TRUE(p.waits);
  EXPECT_EQ(p.workers, 3);
  EXPECT_NE(p.cap_reason.find("1 free core"), std::string::npos) << p.cap_reason;
  EXPECT_NEAR(p.predicted_step_ms, 40.0 / 3 + 2.5, 1e-12);
}

// Loading that computes (98% CPU) on 2 cores: one free core, so 1 worker; a batch every
// max(10 / 1, 10 x 0.98 / 1) = 10 ms; step 12.5 ms against 10.5 now: 0.84x, a worker only costs.
TEST(LoaderModel, ComputingLoadingGainsNothingWithoutFreeCores) {
  LoaderModelInput in{10.5, 0.5, 10.0, 0.98, 2, 0};
  LoaderPlan p = plan_workers(in);
  EXPECT_FALSE(p.waits);
  EXPECT_EQ(p.workers, 1);
  EXPECT_DOUBLE_EQ(p.predicted_step_ms, 12.5);
  EXPECT_NEAR(p.speedup, 10.5 / 12.5, 1e-12);
  EXPECT_LT(p.speedup, 1 + th::kLoaderNoGainMargin);
}

// Unknown CPU share counts as computing: 64 ms per batch, 30 ms compute, 8 cores (7 free):
// ceil(64 / 30) + 1 = 4 workers; a batch every max(16, 64 / 7 = 9.14) = 16 ms; step
// max(30, 16) + 2.5 = 32.5 ms.
TEST(LoaderModel, UnknownShareIsTakenAsComputing) {
  LoaderModelInput in{100, 30, 64, -1, 8, 0};
  LoaderPlan p = plan_workers(in);
  EXPECT_FALSE(p.waits);
  EXPECT_EQ(p.workers, 4);
  EXPECT_DOUBLE_EQ(p.period_ms, 16);
  EXPECT_DOUBLE_EQ(p.predicted_step_ms, 32.5);
  // The same on 4 cores: capped at 3; a batch every max(64 / 3, 64 / 3) = 21.33 ms, compute 30 still rules.
  in.cores = 4;
  p = plan_workers(in);
  EXPECT_EQ(p.workers, 3);
  EXPECT_NE(p.cap_reason.find("4 usable cores"), std::string::npos) << p.cap_reason;
  EXPECT_DOUBLE_EQ(p.predicted_step_ms, 32.5);
}

TEST(LoaderModel, NoWorkersMeansLoadingInTheLoop) {
  LoaderModelInput in{100, 30, 64, 0.5, 8, 0};
  EXPECT_DOUBLE_EQ(predicted_step_ms(in, 0), 94);  // 30 + 64
  // Unsizable without a load or a compute time.
  EXPECT_EQ(plan_workers(LoaderModelInput{100, 0, 64, 0.5, 8, 0}).workers, -1);
}

}  // namespace
}  // namespace ts::diagnose
