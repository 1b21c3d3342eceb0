// The host-side rules on hand-built evidence: thread-oversubscription from the run layer's live
// measure (which, when present, decides alone) and from the older counters; openblas-on-intel on
// library paths as /proc/PID/maps gives them (Debian's OpenBLAS behind libblas.so.3); MFU (or why
// it is not computed) in compute-bound and model_flops_utilisation.
#include <gtest/gtest.h>

#include "diagnose/device_peaks.h"
#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

using namespace ts::diagnose;
using ts::test::trace_with_steps;
using ts::test::ev_value;
using ts::test::find;
using ts::test::code_site;

namespace {

// The live look's figures on `cores` usable cores: `runnable` threads wanting one on average over
// a 1 s window, oversubscribed by the inspector's own test (> 1.25 x the cores and > cores + 0.5).
SamplesEvidence live_look(int cores, double runnable, int samples = 20) {
  SamplesEvidence s;
  s.cpu_cores = cores;
  s.cpu_budget_cores = cores;
  s.threads_measured = true;
  s.threads_window_s = 1.0;
  s.threads_samples = samples;
  s.runnable_threads_mean = runnable;
  s.thread_budget_cores = cores;
  s.threads_oversubscribed = runnable > 1.25 * cores && runnable > cores + 0.5;
  return s;
}

// Two torchrun ranks on 8 cores, each with ~8 threads wanting a core (16 on 8: 2x).
Evidence live_two_ranks(double runnable_total, int samples = 20) {
  Evidence ev;
  SamplesEvidence s = live_look(8, runnable_total, samples);
  for (int r = 0; r < 2; ++r) {
    SamplesEvidence::ThreadLoad l;
    l.pid = 1000 + r;
    l.rank = r;
    l.threads = 12;
    l.runnable = runnable_total / 2;
    l.omp_num_threads = "";
    s.thread_loads.push_back(l);
  }
  ev.samples = s;
  AgentEvidence a;
  a.torch_threads = 8;
  a.world_size = 2;
  ev.agent = a;
  return ev;
}

}  // namespace

TEST(ThreadOversubscription, LiveMeasureFires) {
  Evidence ev = live_two_ranks(16);
  Diagnosis d_f = diagnose(ev);
  const Finding* f = find(d_f, "thread-oversubscription");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, "samples (live /proc)");
  EXPECT_NEAR(ev_value(*f, "runnable_threads_mean"), 16, 1e-9);
  EXPECT_NEAR(ev_value(*f, "oversubscription_ratio"), 2.0, 1e-9);
  EXPECT_EQ(ev_value(*f, "processes"), 2);
  EXPECT_EQ(ev_value(*f, "threads_total"), 24);
  // 8 intra-op threads per rank on 8 cores: libgomp spins at its barriers, so the whole queue
  // beyond the budget is lost: (16 - 8) / 16.
  EXPECT_NEAR(f->recoverable_fraction, 0.5, 1e-9);
  EXPECT_EQ(ev_value(*f, "barrier_spin"), 1);
  EXPECT_NE(f->explanation.find("GOMP_SPINCOUNT"), std::string::npos) << f->explanation;
  EXPECT_NE(f->title.find("16.0 threads want a core on 8 cores (2.0x), 2 processes"), std::string::npos) << f->title;
  EXPECT_NE(f->explanation.find("rank 1: 12 threads, 8.0 runnable"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("OMP_NUM_THREADS=unset"), std::string::npos) << f->explanation;
  EXPECT_NE(f->fix_code.find("set_num_threads(4)"), std::string::npos);  // 8 cores / 2 ranks
  // At the user's line: the model's call in the loop each process runs.
  CodeSite fwd = code_site("forward", "/work/job/train.py", 57);
  fwd.function = "trainer";
  fwd.code = "loss = F.cross_entropy(model(x), y)";
  ev.agent->sites.push_back(fwd);
  Diagnosis d_s = diagnose(ev);
  const Finding* g = find(d_s, "thread-oversubscription");
  ASSERT_NE(g, nullptr);
  ASSERT_FALSE(g->sites.empty());
  EXPECT_EQ(g->sites[0].line, 57);
  EXPECT_NE(g->sites[0].note.find("torch.set_num_threads(4) before it"), std::string::npos) << g->sites[0].note;
}

// The gain follows what the runtime does at its barriers (libgomp's GOMP_SPINCOUNT: 100 spins
// when a process has more threads than CPUs; Intel OpenMP's KMP_BLOCKTIME spins whatever the
// count). Measured on 2 cores with verify's threads=1 re-run: 2 ranks x 2 threads 1.62x, hogwild's
// 2 processes x 2 threads 2.83x, 2 ranks x 4 threads 1.05x (docs/FINDINGS.md).
TEST(ThreadOversubscription, MoreThreadsThanCoresLoseOnlyTheSwitchingUnlessIntelOpenMpSpins) {
  Evidence ev = live_two_ranks(16);
  ev.agent->torch_threads = 16;  // > 8 cores: libgomp barely spins
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "thread-oversubscription");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.125, 1e-9);  // a quarter of (16 - 8) / 16
  EXPECT_EQ(ev_value(*f, "barrier_spin"), 0);
  ev.samples->openmp_libs = {"/opt/conda/lib/libiomp5.so"};
  Diagnosis d_i = diagnose(ev);
  const Finding* g = find(d_i, "thread-oversubscription");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(g->recoverable_fraction, 0.5, 1e-9);
  EXPECT_NE(g->explanation.find("KMP_BLOCKTIME"), std::string::npos) << g->explanation;
}

// One training process (2 threads, as many as the cores) and its 2 DataLoader workers, each running
// NumPy's OpenBLAS pool of 2 threads: the workers' pools are the excess, so the fix is one thread per
// worker in the DataLoader (a code change: no --set reaches a library's pool in the workers), at
// the DataLoader's line. Measured: a loop like this ran 3.3-7x faster with worker_init_fn limiting
// the pool (tests/corpus/numpy_workers).
TEST(ThreadOversubscription, WorkersThatRunTheirOwnPoolsGetOneThreadEachInTheLoader) {
  Evidence ev;
  SamplesEvidence s = live_look(2, 5.8);
  ASSERT_TRUE(s.threads_oversubscribed);
  SamplesEvidence::ThreadLoad main;
  main.pid = 100;
  main.threads = 5;
  main.runnable = 1.9;
  s.thread_loads.push_back(main);
  for (int w = 0; w < 2; ++w) {
    SamplesEvidence::ThreadLoad l;
    l.pid = 101 + w;
    l.worker_of = 100;
    l.threads = 4;
    l.runnable = 1.95;
    l.parallel_share = 0.95;  // the pool's threads side by side in 19 of 20 samples
    s.thread_loads.push_back(l);
  }
  ev.samples = s;
  AgentEvidence a;
  a.torch_threads = 2;
  a.sites.push_back(code_site("dataloader", "/work/job/train.py", 36));
  ev.agent = a;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "thread-oversubscription");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.6, 1e-9);  // (5.8 - 2) / 5.8, within its 60% cap; no wait measured
  EXPECT_EQ(ev_value(*f, "processes"), 1);
  EXPECT_EQ(ev_value(*f, "child_processes"), 2);
  EXPECT_NE(f->title.find("1 process and 2 child processes"), std::string::npos) << f->title;
  EXPECT_NE(f->explanation.find("The training process's 2 child processes"), std::string::npos) << f->explanation;
  EXPECT_TRUE(f->fix_settings.empty());  // threads=2 in the loop would change nothing
  EXPECT_NE(f->fix_code.find("worker_init_fn=one_thread"), std::string::npos) << f->fix_code;
  ASSERT_EQ(f->sites.size(), 1u);
  EXPECT_EQ(f->sites[0].line, 36);
  // The loop's own threads too many as well (4 runnable on 2 cores): both fixes, the threads setting kept.
  ev.samples->thread_loads[0].runnable = 4;
  ev.samples->runnable_threads_mean = 7.9;
  Diagnosis d2 = diagnose(ev);
  const Finding* g = find(d2, "thread-oversubscription");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->fix_settings.empty());
  EXPECT_NE(g->fix.find("And Give each process"), std::string::npos) << g->fix;
  // A loaded host (CI's, 2026-11-29): the pools' threads sleep between NumPy's calls, so the workers'
  // runnable counts fall to 1.2 each, but their threads still ran side by side in half the samples:
  // still the workers' pools. The loop waits 20% of its step for their batches, which one thread per
  // worker gives back with the queue beyond the cores in the rest: 0.2 + 0.8 x (4.1 - 2) / 4.1.
  ev.samples->thread_loads[0].runnable = 1.7;
  for (int w : {1, 2}) ev.samples->thread_loads[w].runnable = 1.2, ev.samples->thread_loads[w].parallel_share = 0.5;
  ev.samples->runnable_threads_mean = 4.1;
  ev.agent->steps = 120;
  ev.agent->step_ms = ev.agent->step_mean_ms = 58;
  ev.agent->data_wait_pct = 20;
  Diagnosis d3 = diagnose(ev);
  const Finding* h = find(d3, "thread-oversubscription");
  ASSERT_NE(h, nullptr);
  EXPECT_NEAR(ev_value(*h, "child_parallel_share"), 0.5, 1e-9);
  EXPECT_NEAR(h->recoverable_fraction, 0.2 + 0.8 * 2.1 / 4.1, 1e-9);
  EXPECT_NE(h->gain.find("the loop waits 20% of its step for the workers' batches"), std::string::npos) << h->gain;
  EXPECT_NE(h->fix_code.find("worker_init_fn=one_thread"), std::string::npos) << h->fix_code;
  // Workers of one thread each (PyTorch's own) beside a loop that fits its 2 cores: 4 threads on
  // 2 cores, but the workers' number is the loader rules' to size, and threads=2 would change
  // nothing: no finding.
  ev.samples->thread_loads[0].runnable = 1.9;
  ev.samples->thread_loads[1].runnable = ev.samples->thread_loads[2].runnable = 1.0;
  ev.samples->thread_loads[1].parallel_share = ev.samples->thread_loads[2].parallel_share = 0;
  ev.samples->runnable_threads_mean = 3.9;
  EXPECT_EQ(find(diagnose(ev), "thread-oversubscription"), nullptr);
}

TEST(ThreadOversubscription, LiveMeasureDecidesAloneWhenPresent) {
  // 8 intra-op threads x 2 processes > 2 x 8 cores would fire the configuration path, but the
  // threads were measured and most of them sleep: no finding.
  Evidence ev = live_two_ranks(9);
  ev.agent->torch_threads = 16;
  ASSERT_FALSE(ev.samples->threads_oversubscribed);
  EXPECT_EQ(find(diagnose(ev), "thread-oversubscription"), nullptr);
  // Too short a look (the job ended within ~0.2 s of it): the older evidence decides.
  Evidence brief = live_two_ranks(9, 3);
  brief.agent->torch_threads = 16;
  Diagnosis d_f = diagnose(brief);
  const Finding* f = find(d_f, "thread-oversubscription");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, "agent+samples");
  // No live measure at all: the counters' path as before.
  Evidence counters;
  SamplesEvidence s;
  s.cpu_cores = 4;
  s.threads_total = 40;
  s.nonvoluntary_switches_per_s = 4 * 150;
  counters.samples = s;
  Diagnosis d_g = diagnose(counters);
  const Finding* g = find(d_g, "thread-oversubscription");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->source, "samples");
}

TEST(OpenblasOnIntel, MapsPathsAsTheRunLayerFillsThem) {
  Evidence ev;
  SamplesEvidence s;
  s.cpu_cores = 8;
  s.cpu_budget_cores = 8;
  s.process_tree_cpu_mean_pct = 780;  // 97.5% of 8 cores
  s.cpu_vendor = "GenuineIntel";
  s.blas_libs = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"};  // Debian's OpenBLAS
  s.nvml = true;
  s.gpus = 1;
  s.gpu_util_mean_pct = 40;  // the GPU waits on the host
  ev.samples = s;
  AgentEvidence a;
  a.steps = 20;
  a.step_ms = 50;
  a.data_wait_pct = 30;
  a.loading_cpu_share = 0.9;  // the loaders compute (where NumPy preprocessing would run)
  a.cuda_available = true;
  ev.agent = a;
  Diagnosis d_f = diagnose(ev);
  const Finding* f = find(d_f, "openblas-on-intel");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("libblas.so.3"), std::string::npos) << f->title;
  ev.samples->blas_libs = {"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"};  // reference BLAS
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);
  ev.samples->blas_libs = {"/venv/lib/python3.11/site-packages/numpy.libs/libopenblas64_p-r0-15028c96.3.21.so"};
  EXPECT_NE(find(diagnose(ev), "openblas-on-intel"), nullptr);
  ev.samples->cpu_vendor = "AuthenticAMD";
  EXPECT_EQ(find(diagnose(ev), "openblas-on-intel"), nullptr);
}

TEST(Mfu, PeaksAndWhyNot) {
  // H100 SXM bf16 dense peak 989 TFLOP/s: 49.45 TFLOP per 100 ms step = 494.5 TFLOP/s = 50%.
  Mfu m = model_flops_utilisation(49.45e12, 100, "NVIDIA H100 80GB HBM3", 90, true, true);
  EXPECT_NEAR(m.achieved_tflops, 494.5, 1e-9);
  EXPECT_NEAR(m.peak_tflops, 989, 1e-9);
  EXPECT_NEAR(m.mfu_pct, 50, 1e-9);
  EXPECT_TRUE(m.note.empty());
  // fp32 on an A100 (compute capability 8.0): the TF32 peak, 156.
  EXPECT_NEAR(model_flops_utilisation(15.6e12, 1000, "NVIDIA A100-SXM4-80GB", 80, false, true).mfu_pct, 10, 1e-9);
  Mfu cpu = model_flops_utilisation(51314688, 10, "", 0, false, false);
  EXPECT_NEAR(cpu.achieved_tflops, 51314688 / 0.01 / 1e12, 1e-15);
  EXPECT_EQ(cpu.mfu_pct, -1);
  EXPECT_EQ(cpu.note, "MFU not computed: no known peak for CPU");
  Mfu unknown_gpu = model_flops_utilisation(1e12, 100, "NVIDIA GeForce RTX 4090", 89, true, true);
  EXPECT_EQ(unknown_gpu.note, "MFU not computed: no known peak for NVIDIA GeForce RTX 4090");
  EXPECT_EQ(model_flops_utilisation(-1, 100, "NVIDIA H100 80GB HBM3", 90, true, true).achieved_tflops, -1);
}

TEST(ComputeBound, AchievedFlopsWithoutAKnownPeak) {
  Evidence ev;
  ev.trace = trace_with_steps(4, 100, 1, 95);
  ev.trace->device_name = "NVIDIA GeForce RTX 4090";
  AgentEvidence a;
  a.steps = 10;
  a.step_ms = 100;
  a.model_flops_per_step = 5e12;  // 50 TFLOP/s
  ev.agent = a;
  Diagnosis d_f = diagnose(ev);
  const Finding* f = find(d_f, "compute-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(ev_value(*f, "achieved_tflops"), 50, 1e-9);
  EXPECT_EQ(ev_value(*f, "mfu_pct"), -12345);  // absent
  EXPECT_NE(f->explanation.find("MFU not computed: no known peak for NVIDIA GeForce RTX 4090"), std::string::npos)
      << f->explanation;
}
