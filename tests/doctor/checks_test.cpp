// Every check on crafted facts: the situations the seeds and REFERENCE.md describe, with the
// numbers the summary and fix must carry.
#include <gtest/gtest.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"
#include "support/contains.h"

using namespace ts::doctor;

namespace {

using ts::test::has;

DoctorFacts cpu_box() {
  DoctorFacts f;
  f.host.hostname = "box";
  f.host.cpu_vendor = "AuthenticAMD";
  f.host.budget.online = 16;
  f.host.budget.cores_usable = 16;
  f.host.budget.budget_cores = 16;
  f.host.shm_total_bytes = 8LL << 30;
  f.host.shm_free_bytes = 8LL << 30;
  f.python.ran = true;
  f.python.python = "/usr/bin/python3";
  f.python.has_torch = true;
  f.python.torch_version = "2.4.1+cu121";
  f.python.torch_cuda = "12.1";
  f.python.cuda_built = true;
  f.python.num_threads = 16;
  f.process.pid = 4242;
  f.process.readable = true;
  return f;
}

GpuFacts gpu(int i, int major = 9, int minor = 0) {
  GpuFacts g;
  g.index = i;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-" + std::to_string(i);
  g.cc_major = major, g.cc_minor = minor;
  g.pcie_gen = 5, g.pcie_gen_max = 5, g.pcie_width = 16, g.pcie_width_max = 16;
  g.util_ratio = 0;
  g.throttle_reasons = 0x1;  // idle
  g.processes_known = true;
  g.ecc_uncorrected_volatile = 0, g.ecc_corrected_volatile = 0, g.ecc_uncorrected_aggregate = 0;
  g.remap_pending = 0, g.remap_failure = 0;
  return g;
}

DoctorFacts gpu_box(int n) {
  DoctorFacts f = cpu_box();
  f.nvidia.driver_found = true;
  f.nvidia.driver_version = "550.54.15";
  f.nvidia.cuda_driver_version = 12040;
  f.nvidia.kernel_log_readable = true;
  for (int i = 0; i < n; ++i) f.nvidia.gpus.push_back(gpu(i));
  f.python.cuda_available = 1;
  f.python.cuda_device_count = n;
  f.python.cuda_probe_ok = true;
  f.python.arch_list = {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"};
  return f;
}

}  // namespace

TEST(Versions, Parse) {
  EXPECT_EQ(parse_version("2.4.1+cu121"), (std::array<int, 3>{2, 4, 1}));
  EXPECT_EQ(parse_version("1.13.0a0"), (std::array<int, 3>{1, 13, 0}));
  EXPECT_EQ(parse_version("12.1"), (std::array<int, 3>{12, 1, 0}));
  EXPECT_EQ(parse_version("x")[0], -1);
  EXPECT_TRUE(version_less("1.13.0a0", 2, 0));
  EXPECT_FALSE(version_less("2.0.0", 2, 0));
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(clock_reason_names(0x44), "sw_power_cap,hw_thermal");
}

TEST(Checks, NoDriverIsAWarnAndGpuChecksSkip) {
  DoctorFacts f = cpu_box();
  f.nvidia.error = "no NVIDIA driver found (libnvidia-ml.so.1 not loadable)";
  auto all = run_checks(f);
  ASSERT_EQ(all.size(), 14u);
  EXPECT_EQ(all[0].id, "nvidia-driver");
  EXPECT_EQ(all[0].status, Status::warn);
  EXPECT_EQ(all[0].summary, "no NVIDIA driver found (libnvidia-ml.so.1 not loadable)");
  for (const auto& c : all) {
    if (c.id == "pcie-link" || c.id == "gpu-busy" || c.id == "gpu-throttle" || c.id == "gpu-errors") {
      EXPECT_EQ(c.status, Status::skip) << c.id;
    }
  }
}

TEST(Checks, HealthyH100BoxPassesEverything) {
  DoctorFacts f = gpu_box(8);
  f.python.num_threads = 2;
  f.host.budget.online = f.host.budget.cores_usable = 64;
  f.host.budget.budget_cores = 64;
  for (const auto& c : run_checks(f)) {
    if (c.id == "cpu-blas" || c.id == "openmp-runtimes") continue;  // no runtimes listed
    EXPECT_EQ(c.status, Status::pass) << c.id << ": " << c.summary;
  }
  EXPECT_EQ(check_nvidia_driver(f).summary, "driver 550.54.15 (CUDA 12.4), 8 GPUs: NVIDIA H100 80GB HBM3 x8");
}

TEST(Checks, CpuOnlyTorchWithGpusFails) {
  DoctorFacts f = gpu_box(2);
  f.python.torch_version = "2.4.1+cpu";
  f.python.torch_cuda = "";
  f.python.cuda_built = false;
  f.python.cuda_available = 0;
  auto c = check_torch_cuda_build(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.fix, "whl/cu124")) << c.fix;
  EXPECT_EQ(check_cuda_usable(f).status, Status::fail);
}

TEST(Checks, TorchCudaNewerThanDriver) {
  DoctorFacts f = gpu_box(1);
  f.nvidia.cuda_driver_version = 11040;
  EXPECT_EQ(check_torch_cuda_build(f).status, Status::fail);
  f.nvidia.cuda_driver_version = 12000;  // same major, older minor: runs with minor-version compatibility
  EXPECT_EQ(check_torch_cuda_build(f).status, Status::warn);
}

TEST(Checks, CudaProbeErrorIsShown) {
  DoctorFacts f = gpu_box(1);
  f.python.cuda_probe_ok = false;
  f.python.cuda_error = "CUDA error: no kernel image is available for execution on the device";
  auto c = check_cuda_usable(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.summary, "no kernel image"));
  EXPECT_TRUE(has(c.fix, "torch-gpu-generation"));
}

TEST(Checks, OldTorchOnAmpereWarnsAndMissingArchFails) {
  DoctorFacts f = gpu_box(1);
  f.nvidia.gpus[0] = gpu(0, 8, 0);
  f.python.torch_version = "1.13.1+cu117";
  f.python.arch_list = {"sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"};
  auto c = check_torch_gpu_generation(f);
  EXPECT_EQ(c.status, Status::warn) << c.summary;
  EXPECT_TRUE(has(c.summary, "Ampere"));
  // The same build on an H100: no sm_90 cubin and no compute_ PTX to JIT.
  f.nvidia.gpus[0] = gpu(0, 9, 0);
  c = check_torch_gpu_generation(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.summary, "sm_90"));
  // PTX for compute_80 runs (JIT) on sm_90; an sm_86 cubin runs on sm_89 (same major).
  f.python.torch_version = "2.4.0";
  f.python.arch_list = {"sm_80", "compute_80"};
  EXPECT_EQ(check_torch_gpu_generation(f).status, Status::pass);
  f.nvidia.gpus[0] = gpu(0, 8, 9);
  f.python.arch_list = {"sm_86"};
  EXPECT_EQ(check_torch_gpu_generation(f).status, Status::pass);
}

TEST(Checks, BlasOnIntel) {
  DoctorFacts f = cpu_box();
  f.host.cpu_vendor = "GenuineIntel";
  f.process.runtimes = {{"/venv/numpy.libs/libopenblas64_p-r0.so", "blas", "OpenBLAS"}};
  auto c = check_cpu_blas(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "Intel"));
  f.host.cpu_vendor = "AuthenticAMD";
  EXPECT_EQ(check_cpu_blas(f).status, Status::pass);
  f.process.runtimes = {{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", "blas", "reference BLAS"}};
  EXPECT_EQ(check_cpu_blas(f).status, Status::warn);
  f.process.readable = false;
  EXPECT_EQ(check_cpu_blas(f).status, Status::skip);
}

TEST(Checks, TwoOpenMpRuntimes) {
  DoctorFacts f = cpu_box();
  f.process.runtimes = {{"/venv/torch/lib/libgomp-a34b3233.so.1", "openmp", "GNU OpenMP"}};
  EXPECT_EQ(check_openmp_runtimes(f).status, Status::pass);
  f.process.runtimes.push_back({"/opt/conda/lib/libiomp5.so", "openmp", "Intel OpenMP"});
  auto c = check_openmp_runtimes(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "2 OpenMP runtimes")) << c.summary;
  EXPECT_TRUE(has(c.summary, "different vendors"));
}

TEST(Checks, MultiCardThreadTrap) {
  // Seed 003: 8 GPUs, 32 cores, every process starts 32 threads.
  DoctorFacts f = gpu_box(8);
  f.host.budget.online = f.host.budget.cores_usable = 32;
  f.host.budget.budget_cores = 32;
  f.python.num_threads = 32;
  auto c = check_thread_budget(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "8 x 32 = 256 threads on 32 cores")) << c.summary;
  EXPECT_TRUE(has(c.fix, "OMP_NUM_THREADS=4")) << c.fix;
  f.python.num_threads = 4;
  EXPECT_EQ(check_thread_budget(f).status, Status::pass);
}

TEST(Checks, ContainerQuotaBelowVisibleCores) {
  DoctorFacts f = cpu_box();
  f.host.budget.online = f.host.budget.cores_usable = 64;
  f.host.budget.quota_cores = f.host.budget.budget_cores = 4;  // min(64 cores, a 4-CPU quota)
  f.host.budget.quota_file = "/sys/fs/cgroup/cpu.max";
  f.python.num_threads = 64;
  auto c = check_thread_budget(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "64 intra-op threads but only 4 cores")) << c.summary;
  EXPECT_TRUE(has(c.fix, "OMP_NUM_THREADS=4"));
}

TEST(Checks, MeasuredOversubscriptionWins) {
  DoctorFacts f = cpu_box();
  f.inspecting_pid = true;
  ts::sample::Oversubscription o;
  o.cpu_budget = 16, o.processes = 4, o.threads_total = 68, o.runnable_threads = 60, o.cpu_cores_used = 15.8;
  o.oversubscribed = true;
  o.summary = "4 processes: 60.0 threads want a core";
  f.oversubscription = o;
  auto c = check_thread_budget(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.fix, "OMP_NUM_THREADS=4")) << c.fix;
}

TEST(Checks, DockerDefaultShm) {
  DoctorFacts f = cpu_box();
  f.host.shm_total_bytes = f.host.shm_free_bytes = 64LL << 20;
  auto c = check_shm_size(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "Docker's default"));
  EXPECT_TRUE(has(c.fix, "--shm-size"));
  f.host.shm_total_bytes = 8LL << 30;
  f.host.shm_free_bytes = 100LL << 20;  // 99% used
  EXPECT_EQ(check_shm_size(f).status, Status::fail);
}

TEST(Checks, DebuggingSwitchesLeftInTheEnvironment) {
  DoctorFacts f = gpu_box(1);
  EXPECT_EQ(check_debug_env(f).status, Status::pass);
  f.process.env["CUDA_LAUNCH_BLOCKING"] = "1";
  f.process.env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL";
  f.process.env["NCCL_DEBUG"] = "INFO";  // messages at start-up, not per call: not a slow-down
  auto c = check_debug_env(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "CUDA_LAUNCH_BLOCKING=1")) << c.summary;
  EXPECT_TRUE(has(c.summary, "TORCH_DISTRIBUTED_DEBUG=DETAIL")) << c.summary;
  EXPECT_FALSE(has(c.summary, "NCCL_DEBUG")) << c.summary;
  EXPECT_TRUE(has(c.fix, "unset CUDA_LAUNCH_BLOCKING")) << c.fix;
  EXPECT_EQ(c.evidence.size(), 2u);
  // Off values are off; an unreadable environment says so instead of passing.
  f.process.env = {{"CUDA_LAUNCH_BLOCKING", "0"}, {"TORCH_DISTRIBUTED_DEBUG", "OFF"}};
  EXPECT_EQ(check_debug_env(f).status, Status::pass);
  f.process.readable = false;
  EXPECT_EQ(check_debug_env(f).status, Status::skip);
}

TEST(Checks, PcieWidthAlwaysGenerationOnlyUnderLoad) {
  DoctorFacts f = gpu_box(2);
  f.nvidia.gpus[0].pcie_gen = 1;  // idle power saving
  EXPECT_EQ(check_pcie_link(f).status, Status::pass);
  EXPECT_TRUE(has(check_pcie_link(f).summary, "idle"));
  f.nvidia.gpus[0].util_ratio = 0.9;
  EXPECT_EQ(check_pcie_link(f).status, Status::warn);
  f.nvidia.gpus[0].util_ratio = 0;
  f.nvidia.gpus[1].pcie_width = 8;
  auto c = check_pcie_link(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "GPU 1 x8/x16")) << c.summary;
}

TEST(Checks, OtherProcessesOnGpus) {
  DoctorFacts f = gpu_box(2);
  f.nvidia.gpus[1].processes = {{777, 12ULL << 30, "python"}};
  auto c = check_gpu_busy(f);
  EXPECT_EQ(c.status, Status::warn);
  EXPECT_TRUE(has(c.summary, "GPU 1: pid 777 python (12.00 GiB)")) << c.summary;
  // The inspected job's own processes do not count.
  f.process.tree = {{777, 4242, "python", 10}};
  EXPECT_EQ(check_gpu_busy(f).status, Status::pass);
}

TEST(Checks, ThrottleAtIdle) {
  DoctorFacts f = gpu_box(2);
  f.nvidia.gpus[1].throttle_reasons = 0x1 | 0x40;  // idle + hw thermal
  auto c = check_gpu_throttle(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.summary, "GPU 1: hw_thermal")) << c.summary;
  // A power cap under load is normal.
  f.nvidia.gpus[1].throttle_reasons = 0x4;
  f.nvidia.gpus[1].util_ratio = 1.0;
  EXPECT_EQ(check_gpu_throttle(f).status, Status::pass);
  f.nvidia.gpus[1].util_ratio = 0;
  EXPECT_EQ(check_gpu_throttle(f).status, Status::warn);
}

TEST(Checks, EccRemapAndXid) {
  DoctorFacts f = gpu_box(1);
  EXPECT_EQ(check_gpu_errors(f).status, Status::pass);
  f.nvidia.gpus[0].remap_pending = 1;
  EXPECT_EQ(check_gpu_errors(f).status, Status::warn);
  f.nvidia.gpus[0].ecc_uncorrected_volatile = 3;
  auto c = check_gpu_errors(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.summary, "3 uncorrectable ECC errors"));
  f = gpu_box(1);
  f.nvidia.xid_lines = {"NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception"};
  EXPECT_EQ(check_gpu_errors(f).status, Status::warn);
  f.nvidia.xid_lines.push_back("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  c = check_gpu_errors(f);
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(has(c.summary, "Xid 79"));
}

TEST(Checks, LostGpuFailsTheDriverCheck) {
  DoctorFacts f = gpu_box(2);
  f.nvidia.gpus[1].lost = true;
  EXPECT_EQ(check_nvidia_driver(f).status, Status::fail);
}
