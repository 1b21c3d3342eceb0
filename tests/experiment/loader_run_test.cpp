// The DataLoader sweep on a dataset with a known per-sample cost: __getitem__ sleeps 5 ms (like
// decoding in a worker, it runs in parallel across workers), batch 4, so one batch costs 20 ms in
// one process. The sweep must measure that cost, and with a 15 ms GPU step recommend
// ceil(20 / 15) = 2 workers. Each worker sleeps 200 ms as it starts (worker_init_fn, like opening
// a dataset's shards): respawned workers pay it again at the second epoch, persistent ones do not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "experiment/evidence_fill.h"
#include "experiment/loader_sweep.h"
#include "torch_python.h"

using namespace ts::experiment;

TEST(LoaderRun, KnownPerSampleCost) {
  TS_REQUIRE_TORCH();
  constexpr double kSampleMs = 5, kBatch = 4, kGpuStepMs = 15, kStartMs = 200;
  setenv("LAB_SAMPLE_MS", "5", 1);
  setenv("LAB_BATCH", "4", 1);
  setenv("LAB_WORKER_START_MS", "200", 1);
  LoaderOptions o;
  o.target = std::string(TS_SOURCE_DIR) + "/examples/lab/tiny_convnet.py:slow_data";
  o.python = ts::test::torch_python();
  o.workers = {0, 1, 2};
  o.batches = 15;
  o.gpu_step_ms = kGpuStepMs;
  o.progress = false;
  LoaderResult r = run_loader_sweep(o);

  ASSERT_EQ(r.points.size(), 5u);  // 3 worker counts, prefetch 4, persistent
  for (auto& p : r.points) ASSERT_TRUE(p.ok()) << p.label() << ": " << p.reason;
  EXPECT_EQ(r.batch_size, 4);
  EXPECT_FALSE(r.cuda);
  // time.sleep never returns early: lower bounds only (other work on the cores stretches the rest).
  // Per sample, not per batch: under the 4 samples' 20 ms of sleep however loaded the machine is.
  EXPECT_GE(r.getitem_ms, kSampleMs);
  EXPECT_LT(r.getitem_ms, kSampleMs * kBatch);
  EXPECT_GE(r.collate_ms, 0);

  const double batch_ms = kSampleMs * kBatch;  // 20 ms in one process
  auto& w0 = r.points[0];
  auto& w2 = r.points[2];
  EXPECT_EQ(w0.num_workers, 0);
  EXPECT_EQ(w2.num_workers, 2);
  // Lower bounds are exact (sleep never returns early); the gain from two workers is the sleeps'
  // (sleeping needs no CPU, so load cannot take it away): at least 1.4x of the ideal 2x.
  EXPECT_GE(1000.0 / w0.batches_per_s, 0.98 * batch_ms);
  EXPECT_GT(w2.batches_per_s, 1.4 * w0.batches_per_s);
  EXPECT_EQ(r.points[3].prefetch_factor, 4);
  EXPECT_TRUE(r.points[4].persistent_workers);
  // A respawned worker sleeps its 200 ms start again at the second epoch; a persistent one does not
  // start again: a gap that sleeps make, not a fork's cost against wake-up jitter.
  EXPECT_GE(w2.first_batch_ms, kStartMs);
  EXPECT_GE(w2.restart_ms, kStartMs);
  EXPECT_LT(r.points[4].restart_ms, w2.restart_ms);

  ASSERT_GE(r.recommended, 0);
  EXPECT_EQ(r.points[size_t(r.recommended)].num_workers, int(std::ceil(batch_ms / kGpuStepMs)));
  EXPECT_FALSE(r.points[size_t(r.recommended)].persistent_workers);  // 25000-batch epochs: restart negligible
  // Seed 000's arithmetic on the measured rate: the GPU waits for whatever the loader is late by.
  double period = 1000.0 / w0.epoch_batches_per_s;
  EXPECT_NEAR(w0.predicted_gpu_idle_pct, 100.0 * (1 - kGpuStepMs / period), 1e-9);
  // A batch can never come faster than its 20 ms of sleep: the GPU idles at least 1 - 15/20 = 25%.
  EXPECT_GE(w0.predicted_gpu_idle_pct, 100.0 * (1 - kGpuStepMs / (0.98 * batch_ms)));
  EXPECT_EQ(r.points[size_t(r.recommended)].predicted_gpu_idle_pct, 0);

  // Without a GPU step: the cheapest within 5% of the best is still 2 workers (1 worker is half as fast).
  LoaderResult nogpu = r;
  nogpu.gpu_step_ms = -1;
  nogpu.warnings.clear();
  recommend_loader(nogpu);
  EXPECT_EQ(nogpu.points[size_t(nogpu.recommended)].num_workers, 2);

  auto ev = loader_evidence(r);
  EXPECT_EQ(ev.points.size(), 5u);
  EXPECT_EQ(ev.recommended_workers, 2);
  EXPECT_EQ(ev.gpu_step_ms, kGpuStepMs);
  EXPECT_EQ(ev.getitem_ms, r.getitem_ms);
  EXPECT_GT(r.shm_total_bytes, 0);
}
