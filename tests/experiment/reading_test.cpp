// The experiments' pure logic: statistics, seed 001's lab reading, the loader recommendation and
// seed 000's idle arithmetic, max-batch's per-sample fit, sizes, and the runner's result line.
#include <gtest/gtest.h>

#include "experiment/lab.h"
#include "experiment/loader_sweep.h"
#include "experiment/max_batch.h"
#include "experiment/runner.h"
#include "experiment/stats.h"
#include "util/error.h"

using namespace ts::experiment;
using ts::median;      // util/stats.h: the one median/percentile helper
using ts::percentile;

TEST(Stats, MedianPercentileSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  // numpy.percentile([10,20,30,40,50], 10) == 14, 90 -> 46
  EXPECT_DOUBLE_EQ(percentile({50, 40, 30, 20, 10}, 0.1), 14);
  EXPECT_DOUBLE_EQ(percentile({50, 40, 30, 20, 10}, 0.9), 46);
  EXPECT_DOUBLE_EQ(spread_pct({10, 20, 30, 40, 50}), 100.0 * (46 - 14) / 30);
  EXPECT_DOUBLE_EQ(spread_pct({7}), 0);
}

TEST(Stats, LineFit) {
  auto f = fit_line({1, 2, 3, 4}, {5, 7, 9, 11});
  EXPECT_NEAR(f.slope, 2, 1e-12);
  EXPECT_NEAR(f.intercept, 3, 1e-12);
  auto g = fit_line({2, 2}, {5, 7});
  EXPECT_EQ(g.slope, 0);
  EXPECT_EQ(g.intercept, 6);
}

TEST(LoaderReading, SeedZeroIdleArithmetic) {
  // "If your GPU processes a batch in 20ms but the dataloader takes 45ms to deliver one, the GPU idles 55%."
  EXPECT_NEAR(predicted_gpu_idle_pct(20, 45), 100.0 * 25 / 45, 1e-9);
  EXPECT_NEAR(predicted_gpu_idle_pct(20, 45), 55.6, 0.05);
  EXPECT_EQ(predicted_gpu_idle_pct(20, 10), 0);  // the loader keeps ahead: no idle
  EXPECT_LT(predicted_gpu_idle_pct(-1, 10), 0);  // unknown GPU step
}

static LoaderPoint pt(int w, double bps, int pf = 2, bool persistent = false, double restart = 0) {
  LoaderPoint p;
  p.num_workers = w;
  p.prefetch_factor = w ? pf : -1;
  p.persistent_workers = persistent;
  p.status = "ok";
  p.batches_per_s = bps;
  p.restart_ms = restart;
  return p;
}

TEST(LoaderReading, CheapestWithinFivePercentOfBest) {
  LoaderResult r;
  r.dataset_batches = 1000;
  r.points = {pt(0, 22.1), pt(1, 40), pt(2, 100), pt(4, 97), pt(4, 99, 4), pt(4, 101, 2, true)};
  recommend_loader(r);
  EXPECT_EQ(r.best, 5);
  EXPECT_EQ(r.recommended, 2);  // 100 >= 0.95 * 101 and 2 workers is the cheapest such
  r.points[2].batches_per_s = 90;
  recommend_loader(r);
  EXPECT_EQ(r.recommended, 3);  // 97 >= 95.95
}

TEST(LoaderReading, GpuStepSetsWhatIsEnough) {
  // Seed 000's table: 0 workers 45.2 ms/batch ... 8 workers 5.1 ms. A 20 ms GPU step needs 50 batches/s.
  LoaderResult r;
  r.dataset_batches = 100000;
  r.gpu_step_ms = 20;
  r.points = {pt(0, 22.1), pt(2, 53.5), pt(4, 107.5), pt(8, 196.1), pt(12, 200.0)};
  recommend_loader(r);
  EXPECT_EQ(r.best, 4);
  EXPECT_EQ(r.recommended, 1);  // 53.5 >= 0.95 * 50
  EXPECT_NEAR(r.points[0].predicted_gpu_idle_pct, 100.0 * (1 - 20 / (1000 / r.points[0].epoch_batches_per_s)), 1e-9);
  EXPECT_NEAR(r.points[0].predicted_gpu_idle_pct, 55.8, 0.1);
  EXPECT_EQ(r.points[1].predicted_gpu_idle_pct, 0);
}

TEST(LoaderReading, EpochRestartCountsForShortEpochs) {
  // 20 batches per epoch: respawning workers (400 ms) each epoch halves the rate; persistent workers keep it.
  LoaderResult r;
  r.dataset_batches = 20;
  r.points = {pt(2, 50, 2, false, 400), pt(2, 50, 2, true, 5)};
  recommend_loader(r);
  EXPECT_NEAR(r.points[0].epoch_batches_per_s, 20 / (20 / 50.0 + 0.4), 1e-9);
  EXPECT_EQ(r.recommended, 1);
}

TEST(LoaderReading, WorkerCounts) {
  EXPECT_EQ(default_worker_counts(2), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(default_worker_counts(6), (std::vector<int>{0, 1, 2, 4, 6}));
  EXPECT_EQ(default_worker_counts(8), (std::vector<int>{0, 1, 2, 4, 8}));
  EXPECT_GE(usable_cores(), 1);
}

static LabResult lab(double fp32, double bf16, double comp, const char* comp_status = "ok") {
  LabResult r;
  r.target = "t.py:f";
  r.device = "cuda";
  auto add = [&](const char* n, double sps, const char* st) {
    LabConfigResult c;
    c.name = n;
    c.status = st;
    c.samples_per_s = sps;
    c.data_wait_pct = 40;
    if (std::string(st) != "ok") c.reason = "torch 1.13 has no torch.compile";
    r.configs.push_back(c);
  };
  add("fp32", fp32, "ok");
  add("bf16", bf16, "ok");
  add("bf16+compile", comp, comp_status);
  read_lab(r);
  return r;
}

static bool has(const LabResult& r, const std::string& id) {
  for (auto& x : r.readings)
    if (x.id == id) return true;
  return false;
}

TEST(LabReading, SeedOneRules) {
  auto small = lab(1000, 1150, 1200);  // +15%: under 20%
  EXPECT_NEAR(small.bf16_speedup, 1.15, 1e-12);
  EXPECT_TRUE(has(small, "precision-not-bottleneck"));
  EXPECT_TRUE(has(small, "kernels-already-fused"));  // 1200/1150 = +4%
  EXPECT_FALSE(has(small, "take-both"));

  auto both = lab(1000, 2000, 3000);
  EXPECT_TRUE(has(both, "bf16-helps"));
  EXPECT_TRUE(has(both, "compile-helps"));
  EXPECT_TRUE(has(both, "take-both"));
  EXPECT_NEAR(both.total_speedup, 3.0, 1e-12);

  auto edge = lab(1000, 1200, 1200);  // exactly 20% is not "less than 20%"
  EXPECT_TRUE(has(edge, "bf16-helps"));
  EXPECT_TRUE(has(edge, "kernels-already-fused"));

  auto skipped = lab(1000, 1100, 0, "skipped");
  EXPECT_LT(skipped.compile_speedup, 0);
  EXPECT_TRUE(has(skipped, "compile-untested"));
  EXPECT_TRUE(has(skipped, "precision-not-bottleneck"));
  for (auto& rd : skipped.readings)
    if (rd.id == "precision-not-bottleneck") {
      EXPECT_NE(rd.text.find("40%"), std::string::npos) << rd.text;
    }
}

// The H100 lab of 2026-11-27 (shared/gpu-results/2026-11-27-h100/r4/lab.json, tiny_convnet, batch
// 32): fp32 3.61 ms, bf16 4.74 ms, bf16+compile 5.64 ms per step; compile's warm-up 11.0 s against
// bf16's 0.76 s. Both steps are slower: the reading says so, and why, never "a small jump".
TEST(LabReading, SlowerStepsAreSaidSlowerWithReasons) {
  LabResult r;
  r.target = "tiny_convnet.py:factory";
  r.device = "cuda";
  auto add = [&](const char* n, double step_ms, double warmup_ms, double wait) {
    LabConfigResult c;
    c.name = n;
    c.status = "ok";
    c.batch_size = 32;
    c.steps = 30;
    c.step_ms_median = step_ms;
    c.samples_per_s = 32 / (step_ms / 1e3);
    c.warmup_ms = warmup_ms;
    c.data_wait_pct = wait;
    r.configs.push_back(c);
  };
  add("fp32", 3.6059, 586.9, 25.2);
  add("bf16", 4.7393, 760.7, 25.9);
  add("bf16+compile", 5.6430, 11027.3, 21.0);
  read_lab(r);
  EXPECT_LT(r.bf16_speedup, 1);
  EXPECT_FALSE(has(r, "precision-not-bottleneck"));
  EXPECT_FALSE(has(r, "kernels-already-fused"));
  ASSERT_TRUE(has(r, "bf16-slower"));
  ASSERT_TRUE(has(r, "compile-slower"));
  for (auto& rd : r.readings) {
    EXPECT_EQ(rd.text.find("small jump"), std::string::npos) << rd.text;
    if (rd.id == "bf16-slower") {
      EXPECT_NE(rd.text.find("slower (-24%: 3.61 -> 4.74 ms per step)"), std::string::npos) << rd.text;
      EXPECT_NE(rd.text.find("too little work per kernel for Tensor Cores"), std::string::npos) << rd.text;
      EXPECT_NE(rd.text.find("cast kernel"), std::string::npos) << rd.text;
    }
    if (rd.id == "compile-slower") {
      EXPECT_NE(rd.text.find("slower (-16%: 4.74 -> 5.64 ms per step)"), std::string::npos) << rd.text;
      // (11027.3 - 760.7) ms of extra warm-up over 30 x 5.643 ms measured: 61x.
      EXPECT_NE(rd.text.find("compilation is not amortised: the warm-up took 10.3 s more than bf16's, 61x"),
                std::string::npos)
          << rd.text;
    }
  }
}

TEST(MaxBatchReading, PerSampleFitAndHeadroom) {
  MaxBatchResult r;
  r.capacity_bytes = 1000;
  r.max_batch = 98;
  for (int b : {2, 4, 8, 16, 32, 64}) r.trials.push_back({b, true, 20.0 + 10.0 * b, ""});
  r.trials.push_back({128, false, 1300, "over"});
  read_max_batch(r, 0.10);
  EXPECT_NEAR(r.bytes_per_sample, 10, 1e-9);
  EXPECT_NEAR(r.fixed_bytes, 20, 1e-9);
  EXPECT_EQ(r.recommended_batch, 88);  // (900 - 20) / 10 = 88, already a multiple of 8
}

TEST(MaxBatchReading, ParseBytes) {
  EXPECT_EQ(parse_bytes("268435456"), 268435456.0);
  EXPECT_EQ(parse_bytes("256MiB"), 268435456.0);
  EXPECT_EQ(parse_bytes("256M"), 268435456.0);
  EXPECT_EQ(parse_bytes("1.5GB"), 1.5e9);
  EXPECT_THROW(parse_bytes("lots"), ts::UserError);
  EXPECT_THROW(parse_bytes("12 parsecs"), ts::UserError);
}

TEST(RunnerProtocol, LastResultLineAtLineStartWins) {
  auto r = parse_runner_output(
      "model says @ts-result {\"status\": \"ok\"}\n@ts-result {\"status\":\"skipped\",\"reason\":\"no compile\","
      "\"step_ms\":[1,2.5]}\nbye\n");
  ASSERT_TRUE(r.has_json);
  EXPECT_EQ(r.status, "skipped");
  EXPECT_EQ(r.reason, "no compile");
  EXPECT_EQ(r.nums("step_ms"), (std::vector<double>{1, 2.5}));
  auto none = parse_runner_output("Traceback...\n");
  EXPECT_EQ(none.status, "error");
  auto bad = parse_runner_output("@ts-result {not json\n");
  EXPECT_EQ(bad.status, "error");
  EXPECT_FALSE(bad.has_json);
}

#include "experiment/subprocess.h"

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  // A child that leaves a grandchild holding the pipes (as DataLoader workers would): the timeout must
  // kill both, not wait 30 s for the grandchild.
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 30 & echo started; sleep 30"};
  o.timeout_s = 1;
  ChildResult r = run_child(o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 5);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_EQ(r.term_signal != 0 || r.exit_code != 0, true);
}

TEST(Subprocess, StderrLinesAndExitStatus) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "echo '@ts-progress 1 2 a' >&2; echo oops >&2; echo out; exit 3"};
  std::vector<std::string> lines;
  o.on_stderr_line = [&](std::string_view l) { lines.emplace_back(l); };
  ChildResult r = run_child(o);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(lines, (std::vector<std::string>{"@ts-progress 1 2 a", "oops"}));
  EXPECT_EQ(r.err_tail, (std::vector<std::string>{"oops"}));  // progress lines are not kept as error context
  ChildOptions missing;
  missing.argv = {"/nonexistent/python3"};
  EXPECT_EQ(run_child(missing).exit_code, 127);
}
