// trainscope snapshot: one structured reading of every GPU, the host and (with --pid) a
// process tree: the richer gpu_snapshot() of seed 000.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <thread>

#include "cli/commands.h"
#include "sample/readings_format.h"
#include "sample/sampler.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace ts::cli {

void register_snapshot(CLI::App& app) {
  struct Opts {
    bool json = false;
    int pid = 0;
    int window_ms = 250;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("snapshot", "One reading of every GPU (NVML), the host and a process tree");
  cmd->footer(
      "GPUs: utilisation, SM/tensor activity and DRAM bandwidth (GPM, Hopper and newer), memory, temperature,\n"
      "power and energy, clocks and clock-event (throttle) reasons, PCIe link and traffic, processes.\n"
      "Host: per-core CPU busy, memory, CPU pressure, CPU budget (affinity, cgroup cpu.max), /dev/shm.\n"
      "Rates are measured over a short window (--window-ms). Without an NVIDIA driver the host part still\n"
      "works. $TRAINSCOPE_NVML_LIBRARY names another NVML library. docs/SAMPLER.md has every field and unit.");
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_option("--pid", o->pid, "Also read this process and its descendants")->check(CLI::PositiveNumber);
  cmd->add_option("--window-ms", o->window_ms, "Window over which rates (CPU %, GPM) are measured")
      ->check(CLI::Range(100, 10000))
      ->capture_default_str();
  cmd->callback([o] {
    sample::SamplerConfig c;
    c.root_pid = o->pid;
    c.interval = std::chrono::milliseconds(o->window_ms);
    c.slow_interval = c.interval;
    if (o->pid > 0 && kill(o->pid, 0) != 0 && errno == ESRCH)
      throw UserError(fmt::format("--pid {}: no such process", o->pid));
    sample::Sampler s(c);
    s.set_pcie_throughput(true);  // one call per GPU here, so its ~20 ms cost is fine
    s.tick();                     // first reading: counters to take deltas from
    std::this_thread::sleep_for(c.interval);
    sample::SnapshotView v;
    v.tick = s.tick();
    v.nvml = s.nvml_available();
    v.nvml_error = v.nvml ? "" : s.nvml_error();
    v.driver_version = s.driver_version();
    v.gpus = s.gpus();
    v.root_pid = o->pid;
    if (o->json) {
      JsonWriter w;
      sample::write_json(w, v);
      fmt::print("{}\n", w.str());
    } else {
      fmt::print("{}", sample::snapshot_text(v));
    }
    std::fflush(stdout);
  });
}

}  // namespace ts::cli
