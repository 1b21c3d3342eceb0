// What one Prometheus scrape of `trainscope serve` costs: rendering 8 GPUs + host + 8 live
// ranks (render_metrics), reading 8 live-status files, and a whole MetricsCollector::scrape()
// with the NVML stand-in simulating 8 GPUs; each against the baseline of reading /proc/stat
// once, measured in the same run. Prints µs per call and % of one core at a 15 s interval.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "sample/procfs.h"
#include "serve/live_status.h"
#include "serve/metrics.h"

using Clock = std::chrono::steady_clock;

static double time_us(const std::function<void()>& f, int iters) {
  f();  // warm
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
}

static std::string live_json(int pid, int rank, double now) {
  return fmt::format(
      "{{\"schema\":\"trainscope.live/1\",\"pid\":{},\"child_pid\":{},\"run_id\":\"bench\",\"command\":\"python train.py\","
      "\"rank\":{},\"local_rank\":{},\"world_size\":8,\"updated_unix\":{},\"stale_after_s\":3600,\"steps_total\":1000,"
      "\"samples_total\":32000,\"data_wait_seconds_total\":12.5,\"step_time_seconds\":{{\"buckets\":[[0.001,0],[0.0025,0],"
      "[0.005,0],[0.01,0],[0.025,10],[0.05,400],[0.1,900],[0.25,990],[0.5,1000],[1,1000],[2.5,1000],[5,1000],[10,1000],"
      "[30,1000],[60,1000],[\"+Inf\",1000]],\"sum\":71.2,\"count\":1000}},\"window\":{{\"seconds\":10,\"steps\":140,"
      "\"step_time_mean_s\":0.071,\"data_wait_ratio\":0.18,\"samples_per_second\":450.2}},\"top_finding\":{{\"id\":"
      "\"dataloader-starvation\",\"severity\":\"medium\",\"title\":\"The GPU waits for data 18% of each step\","
      "\"gain_ratio\":0.15}}}}",
      pid, pid, rank, rank, now);
}

int main() {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char tmpl[] = "/tmp/ts_serve_bench_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  for (int r = 0; r < 8; ++r) std::ofstream(dir + "/" + std::to_string(getpid()) + "-r" + std::to_string(r) + ".json") << live_json(getpid(), r, now);

  ts::serve::ScrapeInput in;
  in.hostname = "bench";
  in.nvml = true;
  in.driver_version = "550.54.15";
  ts::serve::ThrottleAccumulator throttle;
  for (int i = 0; i < 8; ++i) {
    ts::sample::GpuInfo g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = fmt::format("GPU-0000000{}-aaaa-bbbb-cccc-dddddddddddd", i);
    g.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + i);
    g.mem_total_bytes = 85899345920.0, g.sm_clock_max_mhz = 1980, g.pcie_gen_max = 5, g.pcie_width_max = 16;
    g.power_limit_w = 700;
    in.gpus.push_back(g);
    ts::sample::GpuReading r;
    r.index = i, r.util_pct = 97, r.sm_active_pct = 41, r.tensor_active_pct = 22, r.dram_bw_pct = 30, r.sm_occupancy_pct = 20;
    r.mem_used_bytes = 6e10, r.temp_c = 61, r.power_w = 512, r.energy_j = 1e6, r.sm_clock_mhz = 1755, r.mem_clock_mhz = 2619;
    r.clock_reasons = 4, r.pcie_gen = 5, r.pcie_width = 16, r.pcie_tx_bytes_per_s = 1e9, r.pcie_rx_bytes_per_s = 2e9;
    in.tick.gpus.push_back(r);
    throttle.add(static_cast<size_t>(i), 4, 1.0);
  }
  in.throttle = &throttle;
  in.now_unix = now;
  in.live = ts::serve::read_live_statuses(dir, now);

  std::string stat;
  double base = time_us([&] { ts::sample::procfs::read_text("/proc/stat", stat); }, 2000);
  size_t bytes = 0;
  double render = time_us([&] { bytes = ts::serve::render_metrics(in).size(); }, 500);
  double live = time_us([&] { (void)ts::serve::read_live_statuses(dir, now); }, 500);

  fmt::print("serve scrape cost (8 GPUs, 8 live ranks, {} bytes of exposition)\n", bytes);
  fmt::print("  baseline: read /proc/stat             {:8.1f} us\n", base);
  fmt::print("  render_metrics                        {:8.1f} us  ({:.1f}x baseline)\n", render, render / base);
  fmt::print("  read 8 live-status files              {:8.1f} us  ({:.1f}x baseline)\n", live, live / base);

#ifdef TS_NVML_INJECT
  // The whole scrape as the HTTP handler runs it, with 8 stand-in GPUs behind the sampler.
  std::string script = dir + "/nvml.txt";
  std::ofstream(script) << "gpus 8\nall name NVIDIA H100 80GB HBM3\nall util 97\nall reasons 4\n";
  setenv("NVML_INJECT_SCRIPT", script.c_str(), 1);
  ts::serve::MetricsOptions mo;
  mo.interval = std::chrono::milliseconds(200);
  mo.live_dir = dir;
  mo.nvml_library = TS_NVML_INJECT;
  ts::serve::MetricsCollector collector(mo);
  collector.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double full = time_us([&] { bytes = collector.scrape().size(); }, 300);
  collector.stop();
  fmt::print("  full scrape (MetricsCollector)        {:8.1f} us  ({:.1f}x baseline), {} bytes\n", full, full / base, bytes);
  fmt::print("  at a 15 s scrape interval: {:.4f}% of one core\n", full / 15e6 * 100);
#endif
  std::system(("rm -rf " + dir).c_str());
  return 0;
}
