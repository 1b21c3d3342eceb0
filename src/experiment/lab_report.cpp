// The lab's terminal table and JSON: formatting only, every number comes from run_lab / read_lab.
#include <fmt/format.h>

#include "experiment/findings_text.h"
#include "experiment/lab.h"
#include "util/format.h"
#include "util/json_writer.h"

namespace ts::experiment {

std::string lab_text(const LabResult& r) {
  std::string out = fmt::format("Three-run lab: {}\n  {} on {} (torch {}, Python {})\n\n", r.target,
                                r.device.empty() ? "?" : r.device, r.device_name, r.torch_version, r.python_version);
  out += fmt::format("  {:<20} {:>12} {:>10} {:>9} {:>10} {:>11} {:>8}\n", "configuration", "samples/s", "p10-p90",
                     "spread", "step", "peak mem", "vs fp32");
  const LabConfigResult* fp32 = r.find("fp32");
  for (auto& c : r.configs) {
    if (!c.ok()) {
      out += fmt::format("  {:<20} {}: {}\n", c.name, c.status, c.reason);
      continue;
    }
    std::string vs = fp32 && fp32->ok() && fp32->samples_per_s > 0
                         ? fmt::format("{:.2f}x", c.samples_per_s / fp32->samples_per_s)
                         : "-";
    out += fmt::format("  {:<20} {:>12.1f} {:>10} {:>8.0f}% {:>10} {:>11} {:>8}\n", c.name, c.samples_per_s,
                       fmt::format("{:.0f}-{:.0f}", c.samples_per_s_p10, c.samples_per_s_p90), c.spread_pct,
                       human_ns(c.step_ms_median * 1e6), c.peak_mem_bytes >= 0 ? human_bytes(c.peak_mem_bytes) : "-",
                       vs);
  }
  out += "\n";
  if (r.bf16_speedup > 0) out += fmt::format("  fp32 -> bf16:            {:.2f}x\n", r.bf16_speedup);
  if (r.compile_speedup > 0) out += fmt::format("  bf16 -> bf16 + compile:  {:.2f}x\n", r.compile_speedup);
  if (!r.readings.empty()) out += "\nReading:\n";
  for (auto& rd : r.readings) out += fmt::format("  - {}\n", rd.text);
  out += findings_text(r.findings);
  return out;
}

std::string lab_json(const LabResult& r) {
  JsonWriter w;
  w.begin_object();
  w.field("kind", "lab").field("target", r.target).field("device", r.device).field("device_name", r.device_name);
  w.field("torch_version", r.torch_version).field("python_version", r.python_version).field("python", r.python);
  w.key("configs").begin_array();
  for (auto& c : r.configs) {
    w.begin_object();
    w.field("name", c.name).field("status", c.status);
    if (!c.reason.empty()) w.field("reason", c.reason);
    if (c.ok()) {
      w.field("batch_size", c.batch_size).field("steps", c.steps);
      w.field("samples_per_s", c.samples_per_s).field("samples_per_s_p10", c.samples_per_s_p10);
      w.field("samples_per_s_p90", c.samples_per_s_p90).field("samples_per_s_overall", c.samples_per_s_overall);
      w.field("spread_pct", c.spread_pct).field("step_ms_median", c.step_ms_median);
      w.field("data_wait_pct", c.data_wait_pct).field("peak_mem_bytes", c.peak_mem_bytes);
      w.field("mem_kind", c.mem_kind).field("warmup_ms", c.warmup_ms);
      w.field("nonfinite_losses", c.nonfinite_losses);
    }
    w.field("wall_s", c.wall_s);
    w.end_object();
  }
  w.end_array();
  w.key("ratios").begin_object();
  auto ratio = [&](const char* k, double v) {
    w.key(k);
    if (v > 0) w.value(v); else w.null();
  };
  ratio("bf16_vs_fp32", r.bf16_speedup);
  ratio("compile_vs_bf16", r.compile_speedup);
  ratio("compile_vs_fp32", r.total_speedup);
  w.end_object();
  w.key("readings").begin_array();
  for (auto& rd : r.readings) w.begin_object().field("id", rd.id).field("text", rd.text).field("ratio", rd.ratio).end_object();
  w.end_array();
  findings_json(w, r.findings);
  w.end_object();
  return w.take() + "\n";
}

}  // namespace ts::experiment
