// The ImageNet case of issue 32, rebuilt: pytorch/examples imagenet/main.py --dummy on one H100
// (FakeData computes each 3x224x224 image, 2-3 ms per sample in a worker; batch 256 as float32 =
// 147 MiB; 4 workers; the job pinned to 12 of 16 cores, 32% of them busy; DataParallel around the
// model on one GPU). The run measured 61.2 ms per step with 73.7% of it waiting for data, a short
// run whose 4 x 2 prefetched batches were still draining. The expectation, from outside the
// program: PyTorch's DataParallel calls the module directly on one device (no gain from DDP);
// the loading computes on 4 of 12 usable cores, so more workers (11: the usable cores less the
// main process) load batches faster, and the step gains.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::ev_value;
using test::find;

Evidence imagenet_dummy_run() {
  Evidence ev;
  AgentEvidence a;
  a.cuda_available = true;
  a.device_name = "NVIDIA H100 80GB HBM3";
  a.device_capability = 90;
  a.param_device = "cuda:0";
  a.param_dtype = "torch.float32";
  a.data_parallel = true;
  a.steps = 40;
  a.step_ms = 61.2;
  a.step_mean_ms = 61.2;
  a.data_wait_pct = 73.7;
  a.data_wait_ms = 0.737 * 61.2;
  a.gpu_ms = 16.0;  // the GPU's time per step (CUDA events): the step less the wait
  a.sample_getitem_ms = 2.5;
  a.collate_ms = 20;
  a.loading_cpu_share = 0.95;  // FakeData builds every image on the CPU: loading computes
  a.batch_bytes = int64_t(256) * 3 * 224 * 224 * 4;
  AgentEvidence::Loader l;
  l.dataset = "FakeData";
  l.batch_size = 256;
  l.num_workers = 4;
  l.pin_memory = true;
  l.prefetch_factor = 2;
  a.loaders = {l};
  ev.agent = a;
  SamplesEvidence s;
  s.nvml = true;
  s.gpus = 1;
  s.cpu_cores = 16;  // trainscope's own view of the host
  s.cpu_budget_cores = 16;
  s.threads_measured = true;  // the training processes, pinned by taskset to 12 cores
  s.threads_samples = 20;
  s.thread_budget_cores = 12;
  s.runnable_threads_mean = 4.5;
  s.process_tree_cpu_mean_pct = 384;  // 3.84 cores of 12: 32%
  s.process_tree_cpu_max_pct = 384;
  s.host_cpu_mean_pct = 25;
  ev.samples = s;
  // The profiler window: one GPU (DataParallel on one device), busy 16 of 61.2 ms.
  ev.trace = test::trace_with_steps(5, 61.2, 45.2, 16);
  ev.trace->device_name = "NVIDIA H100 80GB HBM3";
  ev.trace->parallel.data_parallel = true;
  ev.trace->gpu.devices = 1;
  return ev;
}

TEST(ImagenetCase, StarvationFirstWithMoreWorkersAndAGain) {
  const Diagnosis d = diagnose(imagenet_dummy_run());
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  ASSERT_EQ(f.id, "dataloader-starvation") << d.verdict;
  // More workers, by number: the 12 usable cores (the job's affinity) less the main process.
  EXPECT_EQ(ev_value(f, "recommended_num_workers"), 11) << f.explanation;
  EXPECT_GT(ev_value(f, "recommended_num_workers"), 4);
  EXPECT_GT(speedup(f.recoverable_fraction), 1.5) << f.gain;
  EXPECT_NE(f.gain.find("num_workers=11"), std::string::npos) << f.gain;
  EXPECT_EQ(f.gain.find("cannot help"), std::string::npos) << f.gain;
  // ms and % are one statistic.
  EXPECT_NEAR(ev_value(f, "data_wait_ms"), ev_value(f, "data_wait_pct") / 100 * ev_value(f, "step_ms"), 1e-9);
  // The measured steps drew on prefetched batches: the steady state is named, and the run too short.
  EXPECT_GT(ev_value(f, "steady_step_ms"), 61.2);
  EXPECT_EQ(ev_value(f, "prefetched_batches"), 8);
  EXPECT_NE(f.explanation.find("too short to reach the steady state"), std::string::npos) << f.explanation;
  // The usable cores are the job's 12 everywhere, never trainscope's 16.
  EXPECT_EQ(f.explanation.find("16 usable cores"), std::string::npos) << f.explanation;
  EXPECT_NE(f.explanation.find("capped at 12 usable cores"), std::string::npos) << f.explanation;
  // The hand-over of a 147 MiB batch is not extrapolated past the 64 MiB measured.
  EXPECT_NE(f.gain.find("hand-over 30.1 ms"), std::string::npos) << f.gain;

  const Finding* dp = find(d, "data-parallel");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->recoverable_fraction, 0);
  EXPECT_EQ(ev_value(*dp, "devices"), 1);
  EXPECT_EQ(d.verdict.find("DataParallel"), std::string::npos) << d.verdict;
}

}  // namespace
}  // namespace ts::diagnose
