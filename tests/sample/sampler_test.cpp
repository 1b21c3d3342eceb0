// The Sampler end to end: GPUs from the NVML injection library (a stand-in for the NVIDIA
// driver, see nvml_inject.cpp) plus the live host and this test's own process tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "sample/inject_script.h"
#include "sample/sampler.h"

using namespace ts::sample;
using namespace std::chrono_literals;
using ts::test::InjectScript;

TEST(Sampler, SummaryFromScriptedGpusAndLiveHost) {
  // GPU 0 runs our process and starves: the driver's 10 ms samples go 9 busy, 5 idle
  // (period 140 ms, duty 9/14). GPU 1 is busier but not ours. GPU 2 is lost after 3 reads.
  std::string script =
      "gpus 3\n"
      "gpu 0 util 20 80\n"
      "gpu 0 sample_period_us 10000\ngpu 0 samples_per_call 10\n"
      "gpu 0 driver_util 100 100 100 100 100 100 100 100 100 0 0 0 0 0\n"
      "gpu 0 gpm 1\ngpu 0 gpm_sm 40\ngpu 0 gpm_tensor 25\n"
      "gpu 0 temp 60 75\ngpu 0 power_mw 300000 500000\ngpu 0 reasons 0 0x4\n"
      "gpu 0 mem_used 1000 3000 2000\n"
      "gpu 0 procs " + std::to_string(getpid()) + ":1000\n"
      "gpu 1 util 100\n"
      "gpu 2 lost_after 3\n";
  InjectScript s(script);
  SamplerConfig c;
  c.interval = 10ms;
  c.slow_interval = 10ms;  // every tick reads everything, so the sequences line up
  c.root_pid = getpid();
  c.nvml_library = TS_NVML_INJECT;
  Sampler sm(c);
  ASSERT_TRUE(sm.nvml_available());
  for (int i = 0; i < 20; ++i) {
    sm.tick();
    std::this_thread::sleep_for(12ms);
  }
  Summary sum = sm.summary();
  EXPECT_EQ(sum.ticks, 20);
  EXPECT_TRUE(sum.nvml);
  EXPECT_EQ(sum.gpus, 3);
  EXPECT_EQ(sum.primary_gpu, 0);  // the GPU our process is on, not the busiest
  EXPECT_DOUBLE_EQ(sum.gpu_util_mean_pct, 50);
  EXPECT_EQ(sum.gpu_util_p10_pct, 20);
  EXPECT_EQ(sum.gpu_util_p90_pct, 80);
  EXPECT_EQ(sum.gpu_pattern, "sawtooth");
  EXPECT_NEAR(sum.sawtooth_period_ms, 140, 1);
  EXPECT_NEAR(sum.sawtooth_duty_pct, 100.0 * 9 / 14, 2);
  EXPECT_EQ(sum.pattern_reading, "sawtooth 140 ms, GPU idle 36%: the GPU waits for data");
  EXPECT_DOUBLE_EQ(sum.sm_active_mean_pct, 40);
  EXPECT_DOUBLE_EQ(sum.tensor_active_mean_pct, 25);
  EXPECT_EQ(sum.temp_max_c, 75);
  EXPECT_NEAR(sum.power_mean_w, 400, 1e-9);
  EXPECT_EQ(sum.throttle_reasons_seen, 0x4u);
  EXPECT_NEAR(sum.throttled_pct, 50, 1e-9);
  EXPECT_EQ(sum.gpu_mem_used_max_bytes, 3000);
  EXPECT_NEAR(sum.per_gpu[0].driver_sample_period_ms, 10, 1e-9);
  EXPECT_TRUE(sum.per_gpu[2].lost);
  EXPECT_FALSE(sum.per_gpu[1].lost);
  EXPECT_EQ(sum.per_gpu[1].pattern.kind, "steady-high");
  // Host side: this process (and any children) seen, cores and budget known.
  EXPECT_GE(sum.process_count, 1);
  EXPECT_GE(sum.threads_total, 1);
  EXPECT_GE(sum.cpu_cores, 1);
  EXPECT_GT(sum.cpu_budget_cores, 0);
  EXPECT_GE(sum.host_cpu_mean_pct, 0);
  EXPECT_GE(sum.process_tree_cpu_mean_pct, 0);
  EXPECT_GT(sum.shm_total_bytes, 0);
  auto hist = sm.gpu_history();
  EXPECT_EQ(hist[0].util.size(), 20u);
  EXPECT_EQ(hist[0].driver_util.size(), 200u);
}

TEST(Sampler, WithoutDriverTheHostStillWorks) {
  SamplerConfig c;
  c.interval = 20ms;
  c.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  c.root_pid = getpid();
  Sampler sm(c);
  EXPECT_FALSE(sm.nvml_available());
  EXPECT_EQ(sm.nvml_error(), "no NVIDIA driver found (/nonexistent/libnvidia-ml.so.1 not loadable)");
  int seen = 0;
  sm.start([&](const Tick& t) {
    ++seen;
    EXPECT_TRUE(t.gpus.empty());
  });
  std::this_thread::sleep_for(300ms);
  sm.stop();
  Summary s = sm.summary();
  EXPECT_EQ(s.ticks, seen);
  EXPECT_GE(seen, 5);
  EXPECT_FALSE(s.nvml);
  EXPECT_EQ(s.gpus, 0);
  EXPECT_EQ(s.gpu_pattern, "unknown");
  EXPECT_GE(s.host_cpu_mean_pct, 0);
  EXPECT_GE(s.process_count, 1);
  EXPECT_GT(s.duration_s, 0.15);
}

TEST(Sampler, FailingConsumerDoesNotKillTheSampler) {
  SamplerConfig c;
  c.interval = 10ms;
  c.use_nvml = false;
  Sampler sm(c);
  int calls = 0;
  sm.start([&](const Tick&) {
    ++calls;
    throw std::runtime_error("/full/disk.db: database or disk is full");
  });
  std::this_thread::sleep_for(200ms);
  sm.stop();
  EXPECT_EQ(calls, 1);  // not called again after it threw
  EXPECT_EQ(sm.callback_error(), "/full/disk.db: database or disk is full");
  EXPECT_GT(sm.summary().ticks, 5);  // sampling went on
}
