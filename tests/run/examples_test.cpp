// Every CPU-capable example in examples/ through `trainscope run` (PyTorch 2.x from .venv, CPU):
// the planted finding must come out on top and no other bottleneck finding may fire
// (examples/README.md lists what each must produce). GPU-only findings are checked on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "run_test_util.h"
#include "support/environment_findings.h"
#include "support/torch_python.h"

namespace ts::run::test {
namespace {

std::string example(const std::string& name) { return std::string(TS_SOURCE_DIR) + "/examples/" + name; }

std::vector<std::string> ids(const RunResult& r) {
  std::vector<std::string> out;
  if (r.diagnosis)
    for (const auto& f : r.diagnosis->findings) out.push_back(f.id);
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

// Findings about the environment rather than the script (this shared 2-core machine has other
// processes on it); they may appear next to the planted one without being false alarms.
const std::set<std::string>& kEnvironment = ts::test::kEnvironmentFindings;

// One account of the step (docs/FINDINGS.md): the findings' claims add up to no more than the step.
void expect_claims_fit(const RunResult& r) {
  if (!r.diagnosis) return;
  double share = 0, ms = 0;
  for (const auto& f : r.diagnosis->findings) {
    share += f.recoverable_fraction;
    if (f.claimed_ms > 0) ms += f.claimed_ms;
  }
  EXPECT_LE(share, 1 + 1e-9);
  if (r.diagnosis->step_ms > 0) {
    EXPECT_LE(ms, r.diagnosis->step_ms * (1 + 1e-9));
  }
}

void expect_only(const RunResult& r, const std::string& top, const std::set<std::string>& also_ok = {}) {
  auto f = ids(r);
  ASSERT_TRUE(r.diagnosis.has_value());
  expect_claims_fit(r);
  ASSERT_FALSE(f.empty()) << "expected " << top;
  EXPECT_EQ(f.front(), top) << "findings: " << joined(f);
  for (const auto& id : f)
    EXPECT_TRUE(id == top || also_ok.count(id) || kEnvironment.count(id)) << "false alarm " << id << " in " << joined(f);
}

TEST(Examples, DataStarved) {
  REQUIRE_TORCH();
  OneIntraOpThread one;
  auto r = run_script({torch_python(), example("data_starved.py"), "40"}, fresh_dir("ex-data"), true);
  EXPECT_GT(r.agent.evidence.data_wait_pct, 50.0);
  expect_only(r, "dataloader-starvation");
}

double evidence(const diagnose::Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return -1;
}

// The ImageNet case from the H100 (issue 32: DataParallel on one GPU, 4 workers computing FakeData
// images beside 12 usable cores), scaled to this 2-core machine by tests/run/scripts/imagenet_like.py:
// loading computes, in the loop (num_workers=0), beside a core the loop leaves free. trainscope must
// put the starvation first with a worker count above the loop's and a gain above 1, the loading
// seen as computing, and the wait's ms and % one statistic. (verify on the quiet VM, 2026-11-27:
// num_workers=1 predicted 1.78x, measured 1.79x.)
TEST(Examples, ImagenetLikeLoadingThatComputesGetsMoreWorkers) {
  REQUIRE_TORCH();
  auto r = run_script({torch_python(), script("imagenet_like.py"), "60"}, fresh_dir("ex-imagenet"), true);
  ASSERT_TRUE(r.diagnosis.has_value());
  expect_claims_fit(r);
  const auto& fs = r.diagnosis->findings;
  ASSERT_FALSE(fs.empty());
  const auto& f = fs.front();
  ASSERT_EQ(f.id, "dataloader-starvation") << "findings: " << joined(ids(r));
  EXPECT_EQ(evidence(f, "num_workers"), 0);
  EXPECT_GE(evidence(f, "recommended_num_workers"), 1) << f.explanation;
  EXPECT_GT(evidence(f, "loading_cpu_pct"), 50) << "loading computes";
  // The worker's hand-over per MiB, measured on this host after the job (sample/shm_fault_cost.h).
  EXPECT_GT(evidence(f, "batch_mib"), 0);
  ASSERT_TRUE(r.evidence.samples.has_value());
  const double shm = r.evidence.samples->shm_fault_ms_per_mib;
  EXPECT_GE(shm, 0) << "not measured after a DataLoader job";
  if (shm > 0) {
    EXPECT_EQ(evidence(f, "shm_fault_ms_per_mib"), shm) << "the model did not take the measured rate";
  }
  EXPECT_GT(f.recoverable_fraction, 0) << f.gain;
  // Workers predicted to shorten the step (by how much is the host's: their loading computes and
  // needs the second core free; bench/loader/verify_accuracy.sh measures the prediction).
  EXPECT_GT(evidence(f, "step_ms"), evidence(f, "predicted_step_ms")) << f.gain;
  EXPECT_NE(f.gain.find("num_workers="), std::string::npos) << f.gain;
  // One statistic: the ms are the % of the mean step the finding quotes.
  EXPECT_NEAR(evidence(f, "data_wait_ms"), evidence(f, "data_wait_pct") / 100 * evidence(f, "step_ms"), 1e-6);
}

TEST(Examples, CpuBoundTransforms) {
  REQUIRE_TORCH();
  auto r = run_script({torch_python(), example("cpu_bound_transforms.py"), "120"}, fresh_dir("ex-cpu"), true);
  expect_only(r, "cpu-bound-transforms");
}

TEST(Examples, GrowingMemory) {
  REQUIRE_TORCH();
  auto r = run_script({torch_python(), example("growing_memory.py"), "40"}, fresh_dir("ex-mem"), true);
  EXPECT_GT(r.agent.evidence.mem_slope_bytes_per_step, 3.0 * 1024 * 1024);  // 4 MiB kept per step
  expect_only(r, "memory-growth");
}

TEST(Examples, CheckpointEveryStep) {
  REQUIRE_TORCH();
  auto r = run_script({torch_python(), example("checkpoint_every_step.py"), "30"}, fresh_dir("ex-ckpt"), true);
  EXPECT_GT(r.agent.evidence.io_pct, 5.0);
  expect_only(r, "in-loop-io");
}

// No planted problem, and the GPU-only ones on a CPU: nothing about the script may fire.
TEST(Examples, HealthyAndGpuOnlyOnesStaySilentOnCpu) {
  REQUIRE_TORCH();
  for (const char* name : {"healthy.py", "host_sync.py", "launch_bound.py", "fp32_on_gpu.py"}) {
    auto r = run_script({torch_python(), example(name), "30"}, fresh_dir(std::string("ex-") + name), true);
    EXPECT_EQ(r.exit.shell_code(), 0) << name;
    for (const auto& id : ids(r))
      EXPECT_TRUE(id == "compute-bound" || kEnvironment.count(id)) << name << ": false alarm " << id << " in "
                                                                   << joined(ids(r));
  }
}

// The planted single-tensor AdamW on the CPU: PyTorch >= 2.4 has fused CPU kernels (the fused
// update measured 0.56 against 3.69 ms here), so the finding speaks on the CPU too, fused=True its
// setting; Debian's 1.13 has fused= for CUDA only: nothing to fuse on the CPU, no finding.
TEST(Examples, UnfusedOptimizerOnTheCpuWhereFusedKernelsRunThere) {
  REQUIRE_TORCH();
  auto r = run_script({torch_python(), example("unfused_optimizer.py"), "30"}, fresh_dir("ex-unfused-cpu"), true);
  ASSERT_TRUE(r.diagnosis.has_value());
  if (ts::test::torch_at_least(2, 4)) {
    expect_only(r, "unfused-optimizer", {"compute-bound"});
    const auto& f = r.diagnosis->findings.front();
    ASSERT_EQ(f.fix_settings.size(), 1u);
    EXPECT_EQ(f.fix_settings[0].first, "optimizer.fused");
    // How much it claims is timing (3.69 of 6.89 ms here, predicted 1.7x, measured 2.5x):
    // docs/BENCHMARKS.md, session 46, not a pass/fail bound.
  }
  if (ts::test::system_python_has_torch()) {
    auto old = run_script({"/usr/bin/python3", example("unfused_optimizer.py"), "30"}, fresh_dir("ex-unfused-1.13"), true);
    ASSERT_TRUE(old.diagnosis.has_value());
    for (const auto& id : ids(old)) EXPECT_NE(id, "unfused-optimizer") << "PyTorch 1.13 has no fused CPU kernels";
  }
}

}  // namespace
}  // namespace ts::run::test
