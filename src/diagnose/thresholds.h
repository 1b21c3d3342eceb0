#pragma once
// Every threshold a rule uses, with where it comes from: a seed (/work/shared/seeds, quoted in
// docs/FINDINGS.md), an anchor tool (REFERENCE.md section 2) or tuning on the real traces in
// tests/data. docs/FINDINGS.md lists the same numbers; change both together.
namespace ts::diagnose::th {

// dataloader-starvation: TensorBoard plugin recommends more workers when DataLoader > 5% of step.
inline constexpr double kDataloaderPct = 5.0;
// Agent-measured data wait: same 5% (anchor), as a share of the step.
inline constexpr double kDataWaitPct = 5.0;
// CPU saturated (seed 003 step 2: "~100% * core_count"): mean host CPU or the job's processes at
// >= 85% of the usable cores. Below it cores are idle and more workers help.
inline constexpr double kCpuSaturatedPct = 85.0;
// Samples alone: sawtooth GPU utilisation (seeds 000, 002) with GPU mean below 80% (seed 000).
inline constexpr double kSawtoothGpuMeanPct = 80.0;

// not-on-gpu: seed 003 step 0 "~0% utilization"; 5% leaves room for a display or a stray kernel.
inline constexpr double kNotOnGpuUtilPct = 5.0;

// host-sync: syncs each step costing >= 1% of step time (nsys lists them by time, no threshold;
// tuned so that the ResNet-50 traces' occasional syncs stay silent).
inline constexpr double kSyncPerStep = 1.0;
inline constexpr double kSyncPctOfStep = 1.0;

// pageable-memcpy: any pageable HtoD/DtoH copy (nsys rule fires on one); report when it costs
// >= 0.5% of trace time or happens every step.
inline constexpr double kPageablePctOfStep = 0.5;

// launch-bound: seed 001 "hundreds of tiny kernels per batch"; HTA short kernel / launch stats.
inline constexpr double kLaunchKernelsPerStep = 100;   // "hundreds"
inline constexpr double kLaunchTinyKernelPct = 50;     // >= half the kernels under 10 µs
// Step time with the GPU idle while the host launches (runtime) or runs framework code
// (cpu_exec): >= 30%. Tuned: the healthy ResNet-50 trace (eager PyTorch 1.8, V100) has 23.6%,
// the usual eager-mode overhead; the DataLoader's share is excluded (dataloader-starvation's).
inline constexpr double kLaunchHostOverheadPct = 30;

// fp32-gemm: TB plugin: cc >= 7.0, no Tensor Core kernels -> AMP. Ours: >= 50% of GEMM time
// in fp32 and GEMMs >= 10% of GPU kernel time. Seed 001: AMP < 20% faster = not precision.
inline constexpr double kFp32ShareOfGemmPct = 50;
inline constexpr double kGemmShareOfKernelPct = 10;
inline constexpr double kLabAmpGain = 0.20;
// Below 1% of step time the change is not worth the user's attention.
inline constexpr double kFp32MinRecoverable = 0.01;
// Conservative speed-up of fp32 GEMM/conv time under bf16/fp16 Tensor Cores (peak ratios are
// 8-16x; real convnets see 2-3x).
inline constexpr double kAmpGemmSpeedup = 2.0;
// fp32-gemm from the agent alone (fp32 parameters on a Tensor Core GPU, no autocast seen): no
// measured GEMM share, so a modest estimate of the step time bf16 would give back...
inline constexpr double kAgentFp32Recoverable = 0.15;
// ...and half of it when TF32 matmuls are on (compute capability >= 8.0): fp32 matmuls then already
// run on Tensor Cores, at half the dense bf16 rate (NVIDIA A100/H100 datasheets: TF32 156 vs bf16
// 312 TFLOP/s on A100, 495 vs 989 on H100 SXM).
inline constexpr double kAgentTf32Recoverable = 0.075;

// few-ops-dominate: seed 001 "a few ops dominate cuda_time_total": top 3 kernels >= 50%.
inline constexpr double kFewOpsTop3Pct = 50;
// ...among more than 3 distinct kernels and >= 1 ms of kernel time (else it is trivially true).
inline constexpr int kFewOpsMinDistinct = 4;
inline constexpr double kFewOpsMinKernelMs = 1.0;

// memory-growth: seeds 000/001; slope x steps >= 5% of peak allocated and >= 1 MiB per step.
inline constexpr double kGrowthShareOfPeak = 0.05;
inline constexpr double kGrowthMinBytesPerStep = 1024.0 * 1024;
inline constexpr int kGrowthMinSteps = 3;
// memory-near-limit: TB plugin, peak memory > 90% of device memory.
inline constexpr double kNearLimitPct = 90;
// reserved-much-larger: seed 001 "reserved much larger than peak allocated": > 1.5x and >= 1 GiB.
inline constexpr double kReservedRatio = 1.5;
inline constexpr double kReservedMinExtraBytes = 1024.0 * 1024 * 1024;
// batch-too-small: TB plugin "GPU utilization < 50% -> larger batch"; seed 002 memory not full:
// peak below 50% of device memory.
inline constexpr double kBatchGpuUtilPct = 50;
inline constexpr double kBatchMemPct = 50;

// in-loop-io: seed 003 "avoid in-iteration overhead"; >= 5% of the step like the data anchor.
inline constexpr double kIoPct = 5.0;

// throttling: seed 000 "above 83 °C most GPUs throttle"; reasons seen in >= 5% of samples.
inline constexpr double kThrottleTempC = 83;
inline constexpr double kThrottledPct = 5;

// thread-oversubscription: seed 003; threads > 2x usable cores with >= 100 involuntary
// context switches per second per core (REFERENCE.md 4: high nonvoluntary rate).
inline constexpr double kThreadsPerCore = 2.0;
inline constexpr double kNonvolPerCorePerS = 100;

// communication-bound: TB plugin, communication > 10% of step.
inline constexpr double kCommPct = 10;

// compute-bound: seed 000 "below 80% you're leaving performance on the table", seed 003 ">90%
// sustained": healthy from 80%.
inline constexpr double kComputeBoundUtilPct = 80;

// launch-bound needs a shallow queue: HTA counts launch delays over 100 µs as outliers; when the
// median kernel waits longer than that in the GPU's queue, the host runs ahead of the GPU and
// launches are not what it waits for (a deep queue idles the GPU only by blocking, not launching).
inline constexpr double kLaunchDeepQueueUs = 100;

// warm-up: one-time set-up (idle attribution cause "setup") holds the GPU idle for >= 25% of its
// span: the trace is dominated by start-up (a quarter of the window is more than any steady-state
// cause tuned here). >= 50% makes it high severity: most of the window says nothing about steps.
inline constexpr double kWarmupSetupPctOfSpan = 25;
inline constexpr double kWarmupHighPctOfSpan = 50;

// gpu-idle: the GPU idles >= 50% of its span ("most of the window", issue 12) and no specific
// rule explains the largest idle cause.
inline constexpr double kGpuIdleMostPct = 50;

// Findings below this recoverable fraction do not take the verdict from compute-bound.
inline constexpr double kVerdictMinRecoverable = 0.05;

}  // namespace ts::diagnose::th
