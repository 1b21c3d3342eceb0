#pragma once
// Every threshold a rule uses, with its reason: a public tool's own rule (the TensorBoard
// PyTorch Profiler plugin's recommendations, HTA, Nsight Systems' expert rules), PyTorch's or
// NVIDIA's documentation, or tuning on the real traces in tests/data (said so where it is).
// docs/FINDINGS.md lists the same numbers; change both together.
#include <cstdint>

namespace ts::diagnose::th {

// dataloader-starvation: TensorBoard plugin recommends more workers when DataLoader > 5% of step.
inline constexpr double kDataloaderPct = 5.0;
// Agent-measured data wait: the same 5% of the step as the TensorBoard plugin's rule.
inline constexpr double kDataWaitPct = 5.0;
// Sizing num_workers (loader_model.h). Loading "waits" when its CPU time is under half its wall
// time (storage, network, sleep): then the workers mostly sleep and more of them than the cores
// help. Half: loading that computes more than that would fill a core per two workers.
inline constexpr double kLoadingWaitsCpuShare = 0.5;
// A CPU-only loop's workers cost more than they save when it waits this many times one batch's
// loading or more (cpu-bound-transforms): the loading measured in the workers holds their collate into
// shared memory, which the loop would not pay, so the bound is conservative; 10% for jitter.
inline constexpr double kWorkersCostMoreRatio = 1.1;
// Per-step findings need this many training steps: the first runs the warm-up (imports, lazy
// initialisation, the allocator's first blocks, finding the model) and is left out of the medians
// only from the third (run/agent_summary.cpp steady_steps). Lightning's bug_report_model.py (one
// batch) got a dataloader-starvation sized from its one step: compute 27 ms in a 14.5 ms step.
inline constexpr int64_t kMinAgentSteps = 3;
// Most worker processes ever recommended: each is a fork of the training process with its own
// Python heap and prefetch buffers, and starting them costs the first steps (PyTorch warns
// past the CPU count); beyond 16 a loader wants asynchronous I/O, not processes.
inline constexpr int kMaxLoaderWorkers = 16;
// The loop's compute stalled after its data waits (a sleeping thread pool woken by the next
// operator) when the 10th percentile of the steps' compute is under this share of the median
// (steady compute varies by far less: its 10th percentile is within 20% of the median).
inline constexpr double kComputeStallRatio = 0.5;
// Other work's cores are shown in the evidence from this much (a sampler's own noise is below).
inline constexpr double kOtherWorkCoresShown = 0.25;
// Handing a batch from a worker to the loop, the main process's part: the queue's get, unpickling,
// each tensor's shared-memory handle fetched over a socket and the storage rebuilt. In the fed
// steady state the loop computes between batches and never sleeps, so it runs hot: measured with
// bench/loader/handover_hot_bench.py on the 2-core build VM (two workers kept ahead with
// data_starved.py's two-tensor batch, the loop spinning 1-5 ms between batches): medians
// 0.55-0.86 ms under PyTorch 1.13 and 2.13 at load average 1.8-2.5, so 0.7 ms (docs/FINDINGS.md).
// The 2.5 ms taken before was the step minus the compute with 1-4 workers computing samples on
// the same two cores under load 4-5: their CPU, which the model's cores term already counts.
inline constexpr double kWorkerHandoverMs = 0.7;
// ... plus this much per MiB of the batch's tensors: the main process receives each storage's
// shared-memory handle and maps it, and its first read of each page faults it in. Measured on the
// 2-core build VM (bench/loader/handover_bench.py, PyTorch 1.13): with two workers always ahead,
// receiving a ready batch and reading one byte per page grew by 0.31, 0.33 and 0.38 ms per MiB
// over 0.1-64 MiB batches in three runs (load average 0.5, 0.8 and 1.3); the median is taken
// (docs/FINDINGS.md). An ImageNet batch of 256 x 3 x 224 x 224 bytes (37 MiB) thus costs about
// 13 ms, not 0.7.
inline constexpr double kWorkerHandoverMsPerMiB = 0.33;
// That slope was measured up to 64 MiB and is not extrapolated past it: beyond, each MiB costs
// what reading it once at host memory bandwidth does, taken as 10 GB/s (0.1 ms per MiB: a single
// core's copy bandwidth on current x86 servers is 10-20 GB/s; the measured 0.33 ms/MiB, about
// 3 GB/s, is a 2-core VM faulting pages in). An ImageNet batch of 256 float32 crops (147 MiB)
// then hands over in 0.7 + 21.1 + 8.3 = 30.1 ms, not the 49 ms the line would give.
inline constexpr double kWorkerHandoverMeasuredMiB = 64;
inline constexpr double kWorkerHandoverBeyondMsPerMiB = 0.1;
// The worker's part, per MiB, on top of the fixed part it shares with the loop: inside a worker
// default_collate allocates each batched tensor in shared memory, so the kernel faults in and
// zeroes every page of the new segment before the samples are copied in. Measured with
// bench/loader/worker_collate_bench.py on the 2-core build VM (2026-11-27, load average 1.0):
// 0.79, 2.62, 9.24 and 36.05 ms of the worker's CPU for 1, 4, 16 and 64 MiB batches, a slope of
// 0.56 ms per MiB under PyTorch 2.13 (0.68 under 1.13); less the 0.06 ms per MiB the same collate
// costs in the loop (bench/loader/big_batch_starved.py: 0.98 ms for 16 MiB), which the loading's
// measured collate already holds: 0.5. Before, the worker's part was taken as the loop's (0.33 ms
// per MiB) and big_batch_starved's workers were predicted 7.3 ms of CPU per batch where they used
// 12.6-15.3 ms.
inline constexpr double kWorkerCollateMsPerMiB = 0.5;
// Measured up to 64 MiB; beyond, three passes over each byte at 10 GB/s (the kernel zeroing the
// page, reading the sample, writing the batch): 0.3 ms per MiB.
inline constexpr double kWorkerCollateBeyondMsPerMiB = 0.3;
// With pin_memory=True the main process's pin-memory thread copies every batch into page-locked
// memory, one batch after another, before the loop can take it: a batch every this many ms per
// MiB at best. Bounded by memory bandwidth (a single core's copy at 10 GB/s: each byte read once
// and written once), not measured here (pinning needs a GPU); PyTorch's caching host allocator
// reuses the pinned blocks, so the steady state pays the copy, not cudaHostAlloc.
inline constexpr double kPinMsPerMiB = 0.1;
// The measured steps ran faster than the model allows the current workers to deliver (by this
// factor): they drew on the batches the workers prefetched during start-up (num_workers x
// prefetch_factor), so the run ended before the steady state, which the model gives instead.
inline constexpr double kLoaderDrainingRatio = 1.2;
// A predicted gain under 10% is called "no gain": on a shared host repeated runs of one script
// spread by several percent, so a smaller gain could not be confirmed by measuring it.
inline constexpr double kLoaderNoGainMargin = 0.10;
// trainscope verify: steps left out at the start of every run (allocator, DataLoader worker
// start-up, torch.compile's first compilations) and the profiler window at the end, which every
// run places on its last 5 steps; at least 20 steps measured in between, so a worker pool that
// delivers in bursts is averaged over several rounds.
inline constexpr int64_t kVerifyWarmupSteps = 10;
inline constexpr int64_t kVerifyProfileSteps = 5;
inline constexpr int64_t kVerifyMinMeasuredSteps = 20;
// CPU saturated: mean host CPU or the job's processes at >= 85% of the usable cores (top shows
// about 100% x cores when every core is busy; 85% leaves room for sampling jitter). Below it
// cores are idle and more DataLoader workers help.
inline constexpr double kCpuSaturatedPct = 85.0;
// Samples alone: sawtooth GPU utilisation (busy bursts between idle gaps, the shape a GPU waiting
// for batches draws in nvidia-smi) with a GPU mean below 80% (kComputeBoundUtilPct's bar).
inline constexpr double kSawtoothGpuMeanPct = 80.0;

// not-on-gpu: a GPU the job does not use reads ~0% in nvidia-smi; 5% leaves room for a display
// or a stray kernel.
inline constexpr double kNotOnGpuUtilPct = 5.0;
// ...while the job's processes keep at least half a core busy on average (50% of one core): they
// are computing, just not on the GPU.
inline constexpr double kNotOnGpuBusyCpuPct = 50.0;

// host-sync: syncs each step costing >= 1% of step time (nsys lists them by time, no threshold;
// tuned so that the ResNet-50 traces' occasional syncs stay silent).
inline constexpr double kSyncPerStep = 1.0;
inline constexpr double kSyncPctOfStep = 1.0;

// pageable-memcpy: any pageable HtoD/DtoH copy (nsys rule fires on one); report when it costs
// >= 0.5% of trace time or happens every step.
inline constexpr double kPageablePctOfStep = 0.5;

// launch-bound: hundreds of tiny kernels per step, each paying a launch of a few µs (PyTorch
// tuning guide: fuse pointwise ops, CUDA graphs); HTA's kernel launch statistics.
inline constexpr double kLaunchKernelsPerStep = 100;   // "hundreds"
inline constexpr double kLaunchTinyKernelPct = 50;     // >= half the kernels under 10 µs
// Step time with the GPU idle while the host launches (runtime) or runs framework code
// (cpu_exec): >= 30%. Tuned: the healthy ResNet-50 trace (eager PyTorch 1.8, V100) has 23.6%,
// the usual eager-mode overhead; the DataLoader's share is excluded (dataloader-starvation's).
inline constexpr double kLaunchHostOverheadPct = 30;

// fp32-gemm: TB plugin: cc >= 7.0, no Tensor Core kernels -> AMP. Ours: >= 50% of GEMM time
// in fp32 and GEMMs >= 10% of GPU kernel time. The lab: bf16 under 1.20x faster than fp32 means
// precision is not what limits the step.
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

// unfused-optimizer from the agent without a trace: the share of the single-tensor optimizer's
// time a fused update keeps (its kernels' work). Ours, from the H100 example trace
// (tests/data/gpu/unfused_optimizer.pt.trace.json.gz): AdamW's single-tensor update ran 960 kernels
// for 1.35 ms per step inside 19.6-20.9 ms of Optimizer.step (7%), so a tenth is generous.
inline constexpr double kFusedOptimizerKeeps = 0.1;
// ... on the CPU (PyTorch >= 2.4's fused CPU kernels): the single-tensor update is a dozen passes
// over each parameter's memory, the fused one a single pass. Measured (docs/BENCHMARKS.md, session
// 46): AdamW over a GPT-2-small's 162M parameters in 161 tensors, 2 cores of an AMD EPYC VM,
// PyTorch 2.13: single-tensor 493-611 ms, fused 69-77 ms per step (0.12-0.16 of it); take 0.2.
inline constexpr double kFusedOptimizerKeepsCpu = 0.2;
// ... the same for SGD with momentum (the buffer's scaling and sum, then the step: three passes;
// weight decay adds one that allocates a new tensor) and Adagrad (the squared gradients' sum, its
// square root into a new tensor, the division and step). Measured over the same shapes
// (bench/run/fused_optimizer_cpu.py, 163M parameters in 149 tensors, 2 cores of an Intel Xeon VM,
// PyTorch 2.13, docs/BENCHMARKS.md, session 48), fused against single-tensor: SGD with momentum
// 0.60, with weight decay too 0.31 (Nesterov's 0.19), Adagrad 0.32; Adam 0.19 and AdamW 0.16 in the
// same run, plain SGD 1.02. Each taken a little above what was measured, as for Adam.
inline constexpr double kFusedSgdMomentumKeepsCpu = 0.65;
inline constexpr double kFusedSgdMomentumDecayKeepsCpu = 0.4;
inline constexpr double kFusedAdagradKeepsCpu = 0.4;
// ... and the optimizer's share of a CPU step from which it is a finding (the fix then gives back
// at least 4% of the step), and its time: a fused call has a cost of its own, which a few small
// tensors do not repay (examples/host_sync.py: single-tensor 0.02 ms, fused 0.03 ms;
// fp32_on_gpu.py 0.03 and 0.04 ms; unfused_optimizer.py's 120 tensors 3.69 and 0.56 ms).
inline constexpr double kOptimizerCpuPct = 5.0;
inline constexpr double kOptimizerCpuMinMs = 0.5;

// few-ops-dominate: a few ops dominate the GPU time (the profiler's key_averages() table sorted by
// cuda_time_total): top 3 kernels >= 50%.
inline constexpr double kFewOpsTop3Pct = 50;
// ...among more than 3 distinct kernels and >= 1 ms of kernel time (else it is trivially true).
inline constexpr int kFewOpsMinDistinct = 4;
inline constexpr double kFewOpsMinKernelMs = 1.0;

// memory-growth: memory that climbs steadily over the steps is a leak (tensors kept across steps,
// e.g. an accumulated loss with its graph: PyTorch FAQ "My model reports cuda runtime error(2):
// out of memory"). The trend's own tests are in growth_trend.h (noise, consistency, still rising
// at the end); kGrowthMinSteps readings at least; the horizon is the run's length when the
// framework says it, else 100,000 steps.
inline constexpr int kGrowthMinSteps = 3;
inline constexpr double kGrowthHorizonSteps = 100000;
// A short window (a profiler trace's 3-7 steps: too few readings for the trend's noise test):
// every reading above the one before, >= 1 MiB per step and >= 5% of the peak over the window.
inline constexpr double kGrowthShortMinBytesPerStep = 1024.0 * 1024;
inline constexpr double kGrowthShortShareOfPeak = 0.05;
// memory-near-limit: TB plugin, peak memory > 90% of device memory.
inline constexpr double kNearLimitPct = 90;
// reserved-much-larger: the caching allocator holds much more than the tensors need
// (torch.cuda.memory_reserved vs max_memory_allocated; PyTorch CUDA semantics, "Memory
// management"): fragmentation. > 1.5x and >= 1 GiB.
inline constexpr double kReservedRatio = 1.5;
inline constexpr double kReservedMinExtraBytes = 1024.0 * 1024 * 1024;
// batch-too-small: TB plugin "GPU utilization < 50% -> larger batch", when memory leaves room:
// peak below 50% of device memory.
inline constexpr double kBatchGpuUtilPct = 50;
inline constexpr double kBatchMemPct = 50;

// in-loop-io: file I/O inside the training loop (checkpoints, logging) costs its time on every
// step; >= 5% of the step, the same bar as the data wait.
inline constexpr double kIoPct = 5.0;
// The run's time outside the step (run.time_account). periodic-evaluation: evaluation's share of
// the run's wall time (issue: >= 10%). compile-cost: compilation's share of the run, and the
// speed-up at which it would pay back within the run: 0.43, PyTorch's reported mean for compiled
// training (pytorch.org/get-started/pytorch-2.0: 43% faster on an A100, 163 models).
inline constexpr double kEvalRunPct = 10.0;
inline constexpr double kCompileRunPct = 10.0;
inline constexpr double kCompileTypicalGain = 0.43;
// slow-start: the time before the first step as a share of the run (a quarter: ours), and its part
// in the user's code (start-up less imports) at least 5 s (ours: less is the ordinary cost of
// building a model and a loader, and not worth a cache).
inline constexpr double kSlowStartRunPct = 25.0;
inline constexpr double kSlowStartMinS = 5.0;
// worker-restarts: the wait for DataLoader workers started again (each pass without
// persistent_workers, a loader built every epoch) that keeping them gives back, as a share of the
// run: 5%, the bar of the step's data wait (kDataWaitPct) on the run's scale.
inline constexpr double kWorkerRestartRunPct = 5.0;
// anomaly-detection: autograd anomaly mode's measured cost per step, at least 2% of the step (ours:
// the severity scale's floor; it is a debugging mode, so any measured cost is worth a line).
inline constexpr double kAnomalyMinPct = 2.0;

// throttling: around 83 °C many NVIDIA GPUs start slowing their clocks (nvidia-smi -q shows the
// GPU's own "GPU Slowdown Temp"); clock-event reasons (NVML nvmlDeviceGetCurrentClocksEventReasons)
// seen in >= 5% of samples.
inline constexpr double kThrottleTempC = 83;
inline constexpr double kThrottledPct = 5;

// page-fault-churn: the kernel's share of the job's CPU (stime over utime + stime, the samples'
// steady span) and the job's minor page faults per second at or above which fresh zeroed pages
// are taken for a cost of the steps, on a job busy at least half a core, where the faults explain
// the kernel's time: at most kPageFaultMaxUsPerFault of kernel CPU per fault. The corpus on this
// 2-core VM (session 53) is bimodal: kernel time that is faults costs 1.4-2.3 us per fault
// (attention_blocks, healthy_mlp, epoch_workers, word_language_model); kernel time that is
// something else (gloo's sockets in fsdp2_layers, a loader's reads) 175 us to 10 ms per fault.
// A host busy with other work stretches the first: sgd_embedding_bag's faults cost 6.2 us each under
// the test suite's own load (session 54) and the 5 us first set lost the finding. The bar sits
// between the two groups, near their geometric middle (sqrt(2.3 x 175) = 20 us).
// A CPU-only loop's own kernel time is a few percent; 22-24% in the kernel with 145-154 k faults/s
// was 1.5x with the fix (healthy_mlp), so the share's floor is 10%, not the 25% first set.
inline constexpr double kPageFaultSysShare = 0.10;
inline constexpr double kPageFaultMinPerS = 50000;
inline constexpr double kPageFaultMaxUsPerFault = 20;
inline constexpr double kPageFaultBusyPct = 50;

// thread-oversubscription: more runnable threads than cores (each PyTorch process starts one
// intra-op thread per core: PyTorch "CPU threading and TorchScript inference" notes; torchrun sets
// OMP_NUM_THREADS=1 only for nproc > 1): threads > 2x usable cores with >= 100 involuntary
// context switches per second per core (/proc/PID/status nonvoluntary_ctxt_switches).
inline constexpr double kThreadsPerCore = 2.0;
inline constexpr double kNonvolPerCorePerS = 100;
// The live /proc measure decides alone from this many 50 ms samples (~0.25 s of the job); fewer
// (the job ended right after the look) say too little to overrule the other evidence.
inline constexpr int kOversubLiveMinSamples = 5;
// Threads wanting a core beyond this many per core (and more than half a thread beyond the cores)
// are oversubscribed: the live measure's own test (sample/oversubscription.h), also applied to a
// part of the job (its DataLoader workers, its training processes alone).
inline constexpr double kOversubRatio = 1.25;
inline constexpr double kOversubMargin = 0.5;
// A DataLoader worker runs a library's thread pool of its own when two or more of its threads
// were in state R at once in this share of the look's samples (ProcessLoad::parallel_share). A
// worker of one thread (PyTorch sets one intra-op thread in each) never is; a pool shows it
// whenever it computes, however loaded the host: 0.25-1.0 per worker for NumPy's OpenBLAS on 2
// loaded cores, where the workers' mean runnable count fell to 0.75-1.2 and failed a count test.
inline constexpr double kPoolParallelShare = 0.2;

// communication-bound: TB plugin, communication > 10% of step.
inline constexpr double kCommPct = 10;

// compute-bound: a GPU busy >= 80% of the time with the input pipeline keeping up is the healthy
// state (below it, idle gaps leave speed on the table): healthy from 80%.
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
