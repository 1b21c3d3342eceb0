// The NVML path, tested against the NVML injection library built by these tests
// (nvml_inject.cpp): a stand-in for the NVIDIA driver that exports the same C symbols with
// scripted values. The real libnvidia-ml is checked on a real GPU, not here.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sample/inject_script.h"
#include "sample/nvml_library.h"
#include "sample/nvml_sampler.h"

using namespace ts::sample;
using ts::test::InjectScript;
using Clock = std::chrono::steady_clock;

namespace {

// Calls counted by the injection library, read through its own handle.
int calls(const char* lib, const char* sym) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return -1;
  auto fn = reinterpret_cast<int (*)(const char*)>(dlsym(h, "nvmlInjectCalls"));
  int n = fn ? fn(sym) : -1;
  dlclose(h);
  return n;
}

const char* kTwoGpus = R"(
gpus 2
driver 550.54.15
gpu 0 name NVIDIA H100 80GB HBM3
gpu 1 name NVIDIA H100 80GB HBM3
all util 97
gpu 0 mem_used 42949672960
gpu 0 temp 71
gpu 0 power_mw 512345
gpu 0 energy_mj 1500000
gpu 0 sm_clock 1755
gpu 0 reasons 0x44
gpu 0 pcie_gen 4
gpu 0 procs 4242:1073741824
)";

}  // namespace

TEST(NvmlLibrary, MissingLibraryIsOneClearLine) {
  NvmlLibrary lib("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(lib.ok());
  EXPECT_EQ(lib.error(), "no NVIDIA driver found (/nonexistent/libnvidia-ml.so.1 not loadable)");
}

TEST(NvmlLibrary, NewestVersionedSymbolsFirst) {
  InjectScript s("gpus 1\n");
  NvmlLibrary lib(TS_NVML_INJECT);
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.bound("init"), "nvmlInit_v2");
  EXPECT_EQ(lib.bound("deviceGetCount"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(lib.bound("deviceGetHandleByIndex"), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(lib.bound("deviceGetPciInfo"), "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(lib.bound("deviceGetClockEventReasons"), "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(lib.bound("deviceGetComputeRunningProcesses"), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(lib.process_entry_size, 24u);
  EXPECT_EQ(calls(TS_NVML_INJECT, "nvmlInit_v2"), 1);
  EXPECT_EQ(calls(TS_NVML_INJECT, "nvmlInit"), 0);
}

TEST(NvmlLibrary, FallsBackToUnversionedSymbols) {
  InjectScript s("gpus 1\n");
  NvmlLibrary lib(TS_NVML_INJECT_LEGACY);
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.bound("init"), "nvmlInit");
  EXPECT_EQ(lib.bound("deviceGetCount"), "nvmlDeviceGetCount");
  EXPECT_EQ(lib.bound("deviceGetPciInfo"), "nvmlDeviceGetPciInfo");
  EXPECT_EQ(lib.bound("deviceGetClockEventReasons"), "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(lib.bound("deviceGetComputeRunningProcesses"), "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(lib.process_entry_size, 16u);
  // Optional calls the old driver lacks are simply absent.
  EXPECT_EQ(lib.deviceGetMemoryInfo_v2, nullptr);
  EXPECT_EQ(lib.deviceGetSamples, nullptr);
  EXPECT_EQ(lib.gpmMetricsGet, nullptr);
  EXPECT_EQ(lib.deviceGetTotalEnergyConsumption, nullptr);
}

TEST(NvmlLibrary, InitFailureSaysWhy) {
  InjectScript s("init_error 9\n");
  NvmlLibrary lib(TS_NVML_INJECT);
  EXPECT_FALSE(lib.ok());
  EXPECT_EQ(lib.error(), "NVML did not start: Driver Not Loaded (NVML 9)");
}

TEST(NvmlSampler, SeveralGpusAllFields) {
  InjectScript s(kTwoGpus);
  NvmlSampler n(TS_NVML_INJECT);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.driver_version(), "550.54.15");
  ASSERT_EQ(n.gpus().size(), 2u);
  EXPECT_EQ(n.gpus()[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(n.gpus()[1].uuid, "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(n.gpus()[1].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(n.gpus()[0].sm_clock_max_mhz, 1980);
  EXPECT_EQ(n.gpus()[0].pcie_gen_max, 5);
  EXPECT_DOUBLE_EQ(n.gpus()[0].power_limit_w, 700);
  EXPECT_DOUBLE_EQ(n.gpus()[0].mem_total_bytes, 85899345920.0);
  auto r = n.read(true, Clock::now());
  ASSERT_EQ(r.size(), 2u);
  const GpuReading& g = r[0];
  EXPECT_EQ(g.util_pct, 97);
  EXPECT_DOUBLE_EQ(g.mem_used_bytes, 42949672960.0);
  EXPECT_EQ(g.temp_c, 71);
  EXPECT_DOUBLE_EQ(g.power_w, 512.345);
  EXPECT_DOUBLE_EQ(g.energy_j, 1500);
  EXPECT_EQ(g.sm_clock_mhz, 1755);
  EXPECT_EQ(g.clock_reasons, 0x44);
  EXPECT_EQ(decode_clock_reasons(static_cast<uint64_t>(g.clock_reasons)), "sw_power_cap,hw_thermal");
  EXPECT_EQ(g.pcie_gen, 4);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 4242u);
  EXPECT_DOUBLE_EQ(g.processes[0].used_bytes, 1073741824.0);
  EXPECT_EQ(r[1].util_pct, 97);
  EXPECT_TRUE(r[1].processes.empty());
  // No GPM on this script: -1, not an error.
  EXPECT_EQ(g.sm_active_pct, -1);
  EXPECT_FALSE(n.gpus()[0].gpm_supported);
}

TEST(NvmlSampler, LegacyDriverStillReadsWhatItHas) {
  InjectScript s(std::string(kTwoGpus) + "gpu 0 procs 10:100 11:200\n");
  NvmlSampler n(TS_NVML_INJECT_LEGACY);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.gpus()[0].pci_bus_id, "0000:17:00.0");  // the v1 struct's 16-byte field
  auto r = n.read(true, Clock::now());
  EXPECT_DOUBLE_EQ(r[0].mem_used_bytes, 42949672960.0);   // v1 memory call
  EXPECT_EQ(r[0].energy_j, -1);                           // symbol missing
  EXPECT_EQ(r[0].clock_reasons, 0x44);                    // old "Throttle" name
  ASSERT_EQ(r[0].processes.size(), 2u);                   // 16-byte entries
  EXPECT_EQ(r[0].processes[1].pid, 11u);
  EXPECT_DOUBLE_EQ(r[0].processes[1].used_bytes, 200);
}

TEST(NvmlSampler, NotSupportedIsNotAvailable) {
  InjectScript s("gpus 1\ngpu 0 unsupported temp power energy util\n");
  NvmlSampler n(TS_NVML_INJECT);
  auto r = n.read(true, Clock::now());
  EXPECT_FALSE(r[0].lost);
  EXPECT_EQ(r[0].temp_c, -1);
  EXPECT_EQ(r[0].power_w, -1);
  EXPECT_EQ(r[0].energy_j, -1);
  EXPECT_EQ(r[0].util_pct, -1);
  EXPECT_GT(r[0].mem_total_bytes, 0);
}

TEST(NvmlSampler, ProcessListGrowsAndRetriesOnInsufficientSize) {
  std::string procs = "gpus 1\ngpu 0 procs";
  for (int i = 0; i < 20; ++i) procs += " " + std::to_string(100 + i) + ":" + std::to_string(i * 1000);
  procs += "\ngpu 0 procs_race 7\n";
  InjectScript s(procs);
  NvmlSampler n(TS_NVML_INJECT);
  auto r = n.read(true, Clock::now());
  // 20 processes, then 7 more appear between the sizing answer and the fill.
  ASSERT_EQ(r[0].processes.size(), 27u);
  EXPECT_EQ(r[0].processes[19].pid, 119u);
  EXPECT_DOUBLE_EQ(r[0].processes[19].used_bytes, 19000);
  EXPECT_EQ(r[0].processes[26].pid, 9006u);
}

TEST(NvmlSampler, LostGpuIsMarkedAndTheOthersGoOn) {
  // GPU 1 answers GPU_IS_LOST from the call after its second utilisation read on.
  InjectScript s("gpus 3\nall util 50\ngpu 1 lost_after 2\n");
  NvmlSampler n(TS_NVML_INJECT);
  auto r0 = n.read(false, Clock::now());
  EXPECT_FALSE(r0[1].lost);
  EXPECT_EQ(r0[1].util_pct, 50);
  for (int i = 0; i < 3; ++i) {
    auto r = n.read(true, Clock::now());
    EXPECT_TRUE(r[1].lost);
    EXPECT_FALSE(r[0].lost);
    EXPECT_FALSE(r[2].lost);
    EXPECT_EQ(r[2].util_pct, 50);
  }
}

TEST(NvmlSampler, GpmPresent) {
  InjectScript s("gpus 2\ngpu 0 gpm 1\ngpu 0 gpm_sm 63.5\ngpu 0 gpm_tensor 41.25\ngpu 0 gpm_occ 30\n"
                 "gpu 0 gpm_dram 55\ngpu 0 gpm_pcie_rx_mib 100\n");
  NvmlSampler n(TS_NVML_INJECT);
  EXPECT_TRUE(n.gpus()[0].gpm_supported);
  EXPECT_FALSE(n.gpus()[1].gpm_supported);
  auto t = Clock::now();
  auto r = n.read(false, t);  // first sample: nothing to compare yet
  EXPECT_EQ(r[0].sm_active_pct, -1);
  r = n.read(false, t + std::chrono::milliseconds(50));  // too soon: driver needs >= 100 ms
  EXPECT_EQ(r[0].sm_active_pct, -1);
  r = n.read(false, t + std::chrono::milliseconds(120));
  EXPECT_DOUBLE_EQ(r[0].sm_active_pct, 63.5);
  EXPECT_DOUBLE_EQ(r[0].tensor_active_pct, 41.25);
  EXPECT_DOUBLE_EQ(r[0].sm_occupancy_pct, 30);
  EXPECT_DOUBLE_EQ(r[0].dram_bw_pct, 55);
  EXPECT_DOUBLE_EQ(r[0].pcie_rx_bytes_per_s, 100.0 * 1048576);
  EXPECT_EQ(r[1].sm_active_pct, -1);
  EXPECT_EQ(calls(TS_NVML_INJECT, "nvmlGpmSampleGet"), 2);
  EXPECT_EQ(calls(TS_NVML_INJECT, "nvmlGpmMetricsGet"), 1);
}

TEST(NvmlSampler, DriverBufferedSamples) {
  InjectScript s("gpus 1\ngpu 0 sample_period_us 16667\ngpu 0 samples_per_call 4\n"
                 "gpu 0 driver_util 100 100 0 0\n");
  NvmlSampler n(TS_NVML_INJECT);
  auto a = n.read(false, Clock::now());
  auto b = n.read(false, Clock::now());
  ASSERT_EQ(a[0].util_samples.size(), 4u);
  ASSERT_EQ(b[0].util_samples.size(), 4u);
  EXPECT_EQ(b[0].util_samples[0].t_us - a[0].util_samples[3].t_us, 16667u);
  EXPECT_EQ(a[0].util_samples[0].value, 100);
  EXPECT_EQ(a[0].util_samples[2].value, 0);
}
