// steady_cpu (run/samples_evidence.h): the job's CPU figures over its steady steps, on a history
// built in memory the way the sampler fills it (a process reading every 0.5 s, the host every 0.1 s).
#include <gtest/gtest.h>

#include "run/debug_switch_warnings.h"
#include "run/samples_evidence.h"

namespace ts::run {
namespace {

// 8 s of readings: the job at 197% of a core for its first 4 s (two spawned DataLoader workers
// importing torch beside the loop), then 50% (the loop, its workers asleep on storage); the host
// at 100% then 25% of its two cores.
sample::HostHistory spawn_start() {
  sample::HostHistory h(1000);
  for (int i = 1; i <= 80; ++i) h.cpu_busy.push(0.1 * i, i <= 40 ? 100 : 25);
  for (int i = 1; i <= 16; ++i) {
    const double t = 0.5 * i, v = t <= 4.0 ? 197 : 50;
    h.tree_cpu.push(t, v);
    h.tree_demand.push(t, v + 3);
  }
  return h;
}

diagnose::SamplesEvidence whole_run() {
  diagnose::SamplesEvidence e;
  e.host_cpu_mean_pct = 62.5;
  e.process_tree_cpu_mean_pct = 123.5;
  e.process_tree_cpu_max_pct = 197;
  e.process_tree_cpu_demand_max_pct = 200;
  return e;
}

TEST(SteadyCpu, StartUpPeaksAreLeftOutOfTheSteadySteps) {
  auto h = spawn_start();
  auto e = whole_run();
  // Steady steps from 4.2 s to 7.9 s: readings at 5.0 ... 7.5 lie wholly inside.
  ASSERT_TRUE(steady_cpu(e, h, 4.2, 7.9));
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_max_pct, 50);
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_mean_pct, 50);
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_demand_max_pct, 53);
  EXPECT_DOUBLE_EQ(e.host_cpu_mean_pct, 25);
  EXPECT_NEAR(e.cpu_window_s, 3.7, 1e-12);
}

TEST(SteadyCpu, AReadingThatStraddlesTheStartIsNotTheSteadySteps) {
  auto h = spawn_start();
  auto e = whole_run();
  // From 3.8 s: the reading at 4.0 s covers 3.5-4.0 s (start-up) and stays out; 4.5 s on count.
  ASSERT_TRUE(steady_cpu(e, h, 3.8, 6.0));
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_max_pct, 50);
}

TEST(SteadyCpu, FewerThanTwoReadingsKeepTheWholeRun) {
  auto h = spawn_start();
  auto e = whole_run();
  EXPECT_FALSE(steady_cpu(e, h, 4.2, 5.2));  // one reading (5.0 s) wholly inside
  EXPECT_FALSE(steady_cpu(e, h, 6.0, 6.0));  // no span
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_max_pct, 197);
  EXPECT_DOUBLE_EQ(e.host_cpu_mean_pct, 62.5);
  EXPECT_EQ(e.cpu_window_s, -1);
}

// The kernel's share and the page faults: over the steady readings less those overlapping the
// profiler window (its recording grows the heap: faults the loop itself does not take), and
// unmeasured (-1) with fewer than two readings left.
TEST(SteadyCpu, KernelTimeAndFaultsLeaveOutTheProfilerWindow) {
  auto h = spawn_start();
  for (size_t i = 0; i < h.tree_cpu.size(); ++i) {
    const double t = h.tree_cpu[i].t_s;
    const bool window = t > 5.5 && t <= 6.5;  // the readings at 6.0 and 6.5 s cover 5.5-6.5 s
    h.tree_sys.push(t, window ? 45 : 10);
    h.tree_minflt.push(t, window ? 90000 : 2000);
  }
  auto e = whole_run();
  ASSERT_TRUE(steady_cpu(e, h, 4.2, 7.9, {{5.6, 6.4}}));
  EXPECT_DOUBLE_EQ(e.process_tree_sys_mean_pct, 10);  // 5.0, 5.5, 7.0, 7.5 s
  EXPECT_DOUBLE_EQ(e.process_tree_minflt_mean_per_s, 2000);
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_mean_pct, 50);  // the CPU figures keep every steady reading
  auto all = whole_run();
  ASSERT_TRUE(steady_cpu(all, h, 4.2, 7.9));
  EXPECT_DOUBLE_EQ(all.process_tree_sys_mean_pct, (4 * 10 + 2 * 45) / 6.0);
  auto few = whole_run();
  ASSERT_TRUE(steady_cpu(few, h, 4.2, 7.9, {{4.0, 7.2}}));  // only 7.5 s left
  EXPECT_EQ(few.process_tree_sys_mean_pct, -1);
}

TEST(SteadyCpu, NoRunQueueReadingsLeaveNoDemand) {
  auto h = spawn_start();
  sample::HostHistory g(1000);
  for (size_t i = 0; i < h.tree_cpu.size(); ++i) {
    g.tree_cpu.push(h.tree_cpu[i].t_s, h.tree_cpu[i].v);
    g.tree_demand.push(h.tree_cpu[i].t_s, -1);  // no schedstat on this kernel
  }
  auto e = whole_run();
  ASSERT_TRUE(steady_cpu(e, g, 4.2, 7.9));
  EXPECT_EQ(e.process_tree_cpu_demand_max_pct, -1);
  EXPECT_DOUBLE_EQ(e.process_tree_cpu_max_pct, 50);
}

// The warning that other work shared the host: its numbers are the ones corpus helper_checkpoint
// measured beside one busy 2-thread process on 2 cores (host 100%, the job 98% of a core), and alone
// (host 59%, the job 118%).
TEST(ContentionWarning, OtherProcessesBusyBesideTheJobAreSaid) {
  diagnose::SamplesEvidence e;
  e.cpu_cores = 2;
  e.host_cpu_mean_pct = 100, e.process_tree_cpu_mean_pct = 98;
  const auto w = contention_warning(e);
  EXPECT_NE(w.find("other processes kept 1.0 of the host's 2 cores busy"), std::string::npos) << w;
  EXPECT_NE(w.find("the job used 1.0"), std::string::npos) << w;
  e.host_cpu_mean_pct = 59, e.process_tree_cpu_mean_pct = 118;  // alone
  EXPECT_EQ(contention_warning(e), "");
  e.host_cpu_mean_pct = 95, e.process_tree_cpu_mean_pct = 160;  // busy, but with the job's own threads
  EXPECT_EQ(contention_warning(e), "");
  e.cpu_cores = 16, e.host_cpu_mean_pct = 90, e.process_tree_cpu_mean_pct = 400;  // a GPU node's preprocessing beside
  EXPECT_NE(contention_warning(e).find("kept 10.4 of the host's 16 cores"), std::string::npos);
  e.host_cpu_mean_pct = -1;  // no host reading
  EXPECT_EQ(contention_warning(e), "");
}

// With the threads each training process runs, the warning says how many the other work leaves
// room for (helper_checkpoint beside one busy process: 2 threads 172-194 ms, 1 thread 51-52 ms).
TEST(ContentionWarning, MoreThreadsThanTheCoresLeftAreToldHowManyToSet) {
  diagnose::SamplesEvidence e;
  e.cpu_cores = 2;
  e.host_cpu_mean_pct = 100, e.process_tree_cpu_mean_pct = 98;
  EXPECT_NE(contention_warning(e, 2).find("torch.set_num_threads(1) (or --set threads=1)"), std::string::npos)
      << contention_warning(e, 2);
  EXPECT_EQ(contention_warning(e, 1).find("set_num_threads"), std::string::npos);  // one thread already
  EXPECT_EQ(contention_warning(e, 0).find("set_num_threads"), std::string::npos);  // not known
  e.cpu_cores = 16, e.host_cpu_mean_pct = 90, e.process_tree_cpu_mean_pct = 400;  // 10.4 cores of others
  EXPECT_NE(contention_warning(e, 16).find("torch.set_num_threads(5)"), std::string::npos) << contention_warning(e, 16);
  // Two training processes share what is left: 2.8 cores each.
  e.threads_measured = true;  // the live look, as fill_evidence leaves it
  e.thread_loads.resize(3);
  e.thread_loads[2].worker_of = 1234;  // a DataLoader worker: not a training process
  EXPECT_NE(contention_warning(e, 16).find("torch.set_num_threads(3)"), std::string::npos) << contention_warning(e, 16);
}

}  // namespace
}  // namespace ts::run

// Debugging switches left in the job's environment (run/debug_switch_warnings): a warning each,
// only where the job did what it slows.
namespace ts::run {
namespace {

TEST(DebugSwitchWarnings, EachOnlyWhereTheJobDidWhatItSlows) {
  const auto set = sample::debug_switches_on({{"CUDA_LAUNCH_BLOCKING", "1"},
                                              {"TORCH_DISTRIBUTED_DEBUG", "DETAIL"},
                                              {"TORCH_COMPILE_DEBUG", "1"},
                                              {"NCCL_DEBUG", "TRACE"},
                                              {"PYTORCH_NO_CUDA_MEMORY_CACHING", "0"}});  // 0: off
  ASSERT_EQ(set.size(), 4u);
  diagnose::AgentEvidence cpu_job;
  cpu_job.param_device = "cpu";
  cpu_job.world_size = 1;
  EXPECT_TRUE(debug_switch_warnings(set, cpu_job).empty());  // none of it ran on the CPU loop
  diagnose::AgentEvidence gloo_ddp = cpu_job;
  gloo_ddp.world_size = 2;
  auto w = debug_switch_warnings(set, gloo_ddp);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("TORCH_DISTRIBUTED_DEBUG=DETAIL is set: every collective", 0), 0u) << w[0];
  diagnose::AgentEvidence gpu_ddp_compiled = gloo_ddp;
  gpu_ddp_compiled.param_device = "cuda:0";
  gpu_ddp_compiled.compiled = true;
  w = debug_switch_warnings(set, gpu_ddp_compiled);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NE(w[0].find("unset CUDA_LAUNCH_BLOCKING"), std::string::npos) << w[0];
}

}  // namespace
}  // namespace ts::run
