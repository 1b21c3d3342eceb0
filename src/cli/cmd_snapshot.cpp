// trainscope snapshot: one structured reading of every GPU, the host and (with --pid) a
// process tree, richer than an nvidia-smi query.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <thread>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "sample/readings_format.h"
#include "sample/sampler.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace ts::cli {

void register_snapshot(CLI::App& app) {
  struct Opts {
    bool json = false;
    int pid = 0;
    std::string window = "250ms";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("snapshot", "One reading of every GPU (NVML), the host and a process tree");
  cmd->footer(
      "GPUs: utilisation, SM/tensor activity and DRAM bandwidth (GPM, Hopper and newer), memory, temperature,\n"
      "power and energy, clocks and clock-event (throttle) reasons, PCIe link and traffic, processes.\n"
      "Host: per-core CPU busy, memory, CPU pressure, CPU budget (affinity, cgroup cpu.max), /dev/shm.\n"
      "Rates are measured over a short window (--window). Without an NVIDIA driver the host part still\n"
      "works. $TRAINSCOPE_NVML_LIBRARY names another NVML library. docs/SAMPLER.md has every field and unit.");
  cmd->add_flag("--json", o->json, "Machine-readable output");
  cmd->add_option("--pid", o->pid, "Also read this process and its descendants")->check(CLI::PositiveNumber);
  cmd->add_option("--window", o->window, "Window over which rates (CPU %, GPM) are measured, 100ms to 10s")
      ->capture_default_str()->check(duration_between(std::chrono::milliseconds(100), std::chrono::seconds(10)));
  cmd->callback([o] {
    sample::SamplerConfig c;
    c.root_pid = o->pid;
    c.interval = duration_value(o->window);
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
