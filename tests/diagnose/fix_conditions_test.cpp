// Every rule claims a gain only where its fix can help, and stays silent (or a note without a
// gain) outside it: DataParallel on one GPU, a larger batch for a busy GPU or a starved one,
// bf16 for an idle GPU, a faster CPU BLAS while the GPU computes, an upgrade by itself, clocks of
// a GPU that waits, more DataLoader workers that the model predicts cannot help.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::ev_value;
using test::find;
using test::trace_with_steps;

// PyTorch's DataParallel.forward calls the module directly when it has one device: no gain.
TEST(FixConditions, DataParallelClaimsNothingOnOneDevice) {
  Evidence ev;
  ev.trace = trace_with_steps(4, 100, 0, 40);
  ev.trace->parallel.data_parallel = true;
  ev.trace->gpu.devices = 1;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "data-parallel");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->recoverable_fraction, 0);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_EQ(ev_value(*f, "devices"), 1);
  EXPECT_EQ(d.verdict.find("DataParallel"), std::string::npos) << d.verdict;

  ev.trace->gpu.devices = 2;  // two GPUs driven by one thread: DDP gives back 70% of the idle
  d = diagnose(ev);
  ASSERT_NE(f = find(d, "data-parallel"), nullptr);
  EXPECT_NEAR(f->own_fraction, 0.6 * 0.7, 1e-9);
  EXPECT_GE(f->severity, Severity::Medium);
}

TEST(FixConditions, DataParallelFromTheAgentAloneIsANote) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 10;
  a.step_ms = 50;
  a.data_parallel = true;
  ev.agent = a;
  const Finding* f = nullptr;
  Diagnosis d = diagnose(ev);
  ASSERT_NE(f = find(d, "data-parallel"), nullptr);
  EXPECT_EQ(f->recoverable_fraction, 0);  // how many GPUs it drives is unknown
}

// batch-too-small needs an idle GPU with free memory that waits on neither data nor a saturated CPU.
TEST(FixConditions, BatchTooSmallOnlyForAnIdleUnstarvedGpu) {
  Evidence ev;
  ev.trace = trace_with_steps(4, 100, 0, 30);
  ev.trace->memory.present = true;
  ev.trace->memory.device_total = 80e9;
  ev.trace->memory.peak_reserved = 4e9;
  EXPECT_NE(find(diagnose(ev), "batch-too-small"), nullptr);
  Evidence busy = ev;
  busy.trace = trace_with_steps(4, 100, 0, 60);
  busy.trace->memory = ev.trace->memory;
  EXPECT_EQ(find(diagnose(busy), "batch-too-small"), nullptr);  // GPU busy 60%
  Evidence full = ev;
  full.trace->memory.peak_reserved = 60e9;
  EXPECT_EQ(find(diagnose(full), "batch-too-small"), nullptr);  // no room for a larger batch
  Evidence starved = ev;
  starved.trace = trace_with_steps(4, 100, 40, 30);
  starved.trace->memory = ev.trace->memory;
  const Diagnosis ds = diagnose(starved);
  EXPECT_EQ(find(ds, "batch-too-small"), nullptr);  // the loader is the cause
  EXPECT_NE(find(ds, "dataloader-starvation"), nullptr);
}

// bf16 shortens the GPU's busy time only: fp32 parameters on an H100 busy 6% of the step give at
// most 3% (half the busy time), under the agent's 15% estimate.
TEST(FixConditions, Fp32GemmBoundedByTheBusyGpu) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 10;
  a.step_ms = 30;
  a.cuda_available = true;
  a.param_device = "cuda:0";
  a.param_dtype = "torch.float32";
  a.device_capability = 90;
  ev.agent = a;
  SamplesEvidence s;
  s.nvml = true;
  s.gpus = 1;
  s.gpu_util_mean_pct = 6;
  ev.samples = s;
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "fp32-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, 0.03, 1e-9);
  ev.samples->gpu_util_mean_pct = 1;  // 0.5%: under the 1% worth reporting
  EXPECT_EQ(find(diagnose(ev), "fp32-gemm"), nullptr);
}

// MKL instead of OpenBLAS helps only when the step waits on the host's math.
TEST(FixConditions, OpenblasSilentWhileTheGpuComputesOrNothingWaits) {
  Evidence ev;
  SamplesEvidence s;
  s.nvml = true;
  s.gpus = 1;
  s.cpu_cores = 8;
  s.host_cpu_mean_pct = 95;
  s.cpu_vendor = "GenuineIntel";
  s.blas_libs = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"};
  s.gpu_util_mean_pct = 90;
  ev.samples = s;
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);  // GPU-bound
  ev.samples->gpu_util_mean_pct = 40;
  AgentEvidence a;
  a.steps = 10;
  a.step_ms = 20;
  a.data_wait_pct = 1;
  a.cuda_available = true;
  ev.agent = a;
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);  // the loop never waits for the host
  ev.agent->data_wait_pct = 20;
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);  // loading not measured: no evidence the CPU computes it
  ev.agent->loading_cpu_share = 0.05;
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);  // the loading waits on storage: no math to speed up
  ev.agent->loading_cpu_share = 0.9;
  const Finding* f = nullptr;
  Diagnosis d = diagnose(ev);
  ASSERT_NE(f = find(d, "openblas-on-intel"), nullptr);
  EXPECT_NEAR(f->own_fraction, 0.18, 1e-9);  // 30% of the 60% idle, within the 20% wait
}

// The case that made a public GPT script's verdict openblas-on-intel: a CPU-only run on an Intel
// host that imported NumPy (its PyPI wheel always bundles OpenBLAS), the CPU busy with the model's
// own math. No GPU waits, so the rule's premise is not met whatever is mapped.
TEST(FixConditions, OpenblasNeverOnACpuOnlyRun) {
  Evidence ev;
  SamplesEvidence s;
  s.cpu_cores = 4;
  s.cpu_budget_cores = 4;
  s.process_tree_cpu_mean_pct = 396;
  s.cpu_vendor = "GenuineIntel";
  s.blas_libs = {"/venv/lib/python3.11/site-packages/numpy.libs/libscipy_openblas64_-ff651d7f.so"};
  ev.samples = s;
  AgentEvidence a;
  a.steps = 200;
  a.step_ms = 30;
  a.cuda_available = false;
  a.param_device = "cpu";
  a.data_wait_pct = 12;
  a.loading_cpu_share = 0.95;
  ev.agent = a;
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);
}

// Upgrading PyTorch is no speed-up by itself: the fixes it enables size their own gains.
TEST(FixConditions, OldPytorchClaimsNoTime) {
  Evidence ev;
  AgentEvidence a;
  a.torch_version = "1.13.1";
  a.device_capability = 80;
  ev.agent = a;
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "old-pytorch-on-ampere");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->recoverable_fraction, 0);
}

// Throttled clocks stretch busy time only: 50% throttled x 0.2 = 10%, on a GPU busy 20%: 2%.
TEST(FixConditions, ThrottlingScaledByTheBusyGpu) {
  Evidence ev;
  SamplesEvidence s;
  s.nvml = true;
  s.gpus = 1;
  s.throttled_pct = 50;
  s.throttle_reasons_seen = 0x20;
  s.gpu_util_mean_pct = 20;
  ev.samples = s;
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "gpu-throttling");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, 0.02, 1e-9);
}

// More workers that the model predicts cannot help (loading computes on the one free core):
// a note with the sizing, no gain claimed.
TEST(FixConditions, DataLoaderWithoutAPredictedGainIsANote) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 20;
  a.step_ms = 35.5;
  a.data_wait_ms = 33;
  a.data_wait_pct = 93;
  a.compute_ms = 0.5;
  a.sample_getitem_ms = 4.125;
  a.collate_ms = 0;
  a.loading_cpu_share = 0.98;
  AgentEvidence::Loader l;
  l.batch_size = 8;
  l.num_workers = 1;
  a.loaders = {l};
  ev.agent = a;
  SamplesEvidence s;
  s.cpu_cores = 2;
  s.host_cpu_mean_pct = 60;
  ev.samples = s;
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "dataloader-starvation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->recoverable_fraction, 0);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_NE(f->gain.find("more workers cannot help"), std::string::npos) << f->gain;
  // Nothing to apply: no code to paste, and no setting: the loop has the workers already.
  EXPECT_TRUE(f->fix_code.empty()) << f->fix_code;
  EXPECT_TRUE(f->fix_settings.empty());
  EXPECT_EQ(f->fix, "Keep num_workers=1: more workers cannot help here.");  // the one it has
}

// A fused optimizer on the CPU needs PyTorch's fused CPU kernels (2.4): where fused=True does not
// run on the parameters' device, no finding; where it does, the step less the fifth of the
// optimizer's time the fused pass keeps. On CUDA, a tenth.
// A single-tensor CLS on CPU parameters: 20 ms of a 50 ms step.
Evidence single_tensor_on_cpu(const std::string& cls, bool fused_on_device) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 10;
  a.step_ms = 50;
  a.optimizer_ms = 20;
  a.optimizer = cls;
  a.optimizer_impl = "single_tensor";
  a.optimizer_has_fused = true;
  a.optimizer_fused_on_device = fused_on_device;
  a.param_device = "cpu";
  ev.agent = a;
  return ev;
}

TEST(FixConditions, UnfusedOptimizerOnTheCpuOnlyWhereFusedRunsThere) {
  Evidence ev = single_tensor_on_cpu("AdamW", false);
  EXPECT_EQ(find(diagnose(ev), "unfused-optimizer"), nullptr);
  ev.agent->optimizer_fused_on_device = true;
  const Diagnosis on_cpu = diagnose(ev);
  const Finding* cpu = find(on_cpu, "unfused-optimizer");
  ASSERT_NE(cpu, nullptr);
  EXPECT_NEAR(cpu->own_fraction, 16.0 / 50, 1e-9);  // 20 ms less the fifth the fused pass keeps
  ASSERT_EQ(cpu->fix_settings.size(), 1u);
  EXPECT_EQ(cpu->fix_settings[0].first, "optimizer.fused");
  ev.agent->optimizer_ms = 2;  // 4% of the step: under the share it speaks from
  EXPECT_EQ(find(diagnose(ev), "unfused-optimizer"), nullptr);
  ev.agent->optimizer_ms = 20;
  ev.agent->optimizer_fused_on_device = false;
  ev.agent->param_device = "cuda:0";
  ev.agent->cuda_available = true;
  const Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "unfused-optimizer");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, 18.0 / 50, 1e-9);  // 20 ms less the tenth a fused update keeps
}

// The fused CPU kernels of SGD and Adagrad (PyTorch >= 2.4): SGD's gain needs momentum (plain SGD is
// one pass already: measured 1.02x of its fused time), and each update keeps the share of its time
// measured for its fused kernel (bench/run/fused_optimizer_cpu.py: SGD with momentum 0.60, with
// weight decay 0.31, Adagrad 0.32; taken as 0.65, 0.4 and 0.4).
TEST(FixConditions, UnfusedSgdOnTheCpuOnlyWithMomentumAndAdagradByItsPasses) {
  Evidence ev = single_tensor_on_cpu("SGD", true);
  EXPECT_EQ(find(diagnose(ev), "unfused-optimizer"), nullptr);  // plain SGD
  ev.agent->optimizer_momentum = 0.9;
  const Diagnosis momentum = diagnose(ev);
  const Finding* f = find(momentum, "unfused-optimizer");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, (20 - 0.65 * 20) / 50, 1e-9);
  ASSERT_EQ(f->fix_settings.size(), 1u);
  EXPECT_EQ(f->fix_settings[0].first, "optimizer.fused");
  EXPECT_NE(f->fix_code.find("torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, fused=True)"), std::string::npos)
      << f->fix_code;
  ev.agent->optimizer_weight_decay = 1e-4;
  const Diagnosis decay = diagnose(ev);
  f = find(decay, "unfused-optimizer");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, (20 - 0.4 * 20) / 50, 1e-9);
  EXPECT_NE(f->explanation.find("weight decay"), std::string::npos) << f->explanation;
  EXPECT_NE(f->fix_code.find("momentum=0.9, weight_decay=0.0001, fused=True"), std::string::npos) << f->fix_code;
  ev.agent->optimizer = "Adagrad";
  const Diagnosis adagrad = diagnose(ev);
  f = find(adagrad, "unfused-optimizer");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->own_fraction, (20 - 0.4 * 20) / 50, 1e-9);
  ev.agent->optimizer = "RMSprop";  // no fused kernel in PyTorch
  EXPECT_EQ(find(diagnose(ev), "unfused-optimizer"), nullptr);
}

// More workers help while cores are free; with the job's cores saturated only cheaper loading
// helps: dataloader-starvation and cpu-bound-transforms never speak together.
TEST(FixConditions, WorkersWhileCoresAreFreeCheaperLoadingWhenSaturated) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 20;
  a.step_ms = 40;
  a.data_wait_pct = 50;
  a.data_wait_ms = 20;
  ev.agent = a;
  SamplesEvidence s;
  s.cpu_cores = 8;
  s.host_cpu_mean_pct = 40;
  ev.samples = s;
  Diagnosis d = diagnose(ev);
  EXPECT_NE(find(d, "dataloader-starvation"), nullptr);
  EXPECT_EQ(find(d, "cpu-bound-transforms"), nullptr);
  ev.samples->host_cpu_mean_pct = 97;
  d = diagnose(ev);
  EXPECT_EQ(find(d, "dataloader-starvation"), nullptr);
  EXPECT_NE(find(d, "cpu-bound-transforms"), nullptr);
}

// Overlapping communication helps only when enough of it is exposed (>= 10% of the step).
TEST(FixConditions, CommunicationBoundOnlyWhenExposed) {
  Evidence ev;
  auto t = trace_with_steps(4, 100, 0, 85);
  t.steps.total.communication = 20'000'000;  // 5% of 400 ms
  t.steps.total.other -= 20'000'000;
  ev.trace = t;
  EXPECT_EQ(find(diagnose(ev), "communication-bound"), nullptr);
  ev.trace->steps.total.communication = 60'000'000;  // 15%
  ev.trace->steps.total.other -= 40'000'000;
  EXPECT_NE(find(diagnose(ev), "communication-bound"), nullptr);
}

}  // namespace
}  // namespace ts::diagnose
