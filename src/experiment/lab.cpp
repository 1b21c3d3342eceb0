#include "experiment/lab.h"

#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "experiment/evidence_fill.h"
#include "experiment/progress.h"
#include "experiment/runner.h"
#include "experiment/stats.h"
#include "util/error.h"

namespace ts::experiment {

const LabConfigResult* LabResult::find(const std::string& name) const {
  for (auto& c : configs)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> lab_configs(const LabOptions& opt) {
  static const std::vector<std::string> known = {"fp32", "bf16", "bf16+compile", "fp16+scaler", "bf16+channels_last"};
  if (!opt.configs.empty()) {
    for (auto& c : opt.configs)
      if (std::find(known.begin(), known.end(), c) == known.end())
        throw UserError(fmt::format("--configs: unknown configuration '{}' (known: fp32, bf16, bf16+compile, "
                                    "fp16+scaler, bf16+channels_last)", c));
    return opt.configs;
  }
  if (opt.extended) return known;
  return {"fp32", "bf16", "bf16+compile"};
}

// Turns one runner result into the numbers the lab reports.
static LabConfigResult summarise(const std::string& name, const RunnerResult& rr) {
  LabConfigResult c;
  c.name = name;
  c.status = rr.status;
  c.reason = rr.reason;
  c.wall_s = rr.wall_s;
  if (!rr.has_json || rr.status != "ok") return c;
  c.batch_size = rr.integer("batch_size");
  std::vector<double>& step_ms = c.step_ms;
  step_ms = rr.nums("step_ms");
  c.steps = int64_t(step_ms.size());
  c.step_ms_median = median(step_ms);
  double p10 = percentile(step_ms, 0.1), p90 = percentile(step_ms, 0.9);
  double samples = double(c.batch_size);
  c.samples_per_s = c.step_ms_median > 0 ? samples * 1000.0 / c.step_ms_median : 0;
  c.samples_per_s_p10 = p90 > 0 ? samples * 1000.0 / p90 : 0;  // slow steps: the low end of the rate
  c.samples_per_s_p90 = p10 > 0 ? samples * 1000.0 / p10 : 0;
  c.spread_pct = spread_pct(step_ms);
  c.samples_per_s_overall = rr.num("samples_per_s");
  std::vector<double> waits = rr.nums("data_wait_ms");
  double wait_sum = 0, step_sum = 0;
  for (double w : waits) wait_sum += w;
  for (double s : step_ms) step_sum += s;
  if (step_sum > 0 && !waits.empty()) c.data_wait_pct = std::min(100.0, 100.0 * wait_sum / step_sum);
  c.peak_mem_bytes = rr.num("peak_mem_bytes", -1);
  c.mem_kind = rr.str("mem_kind");
  c.warmup_ms = rr.num("warmup_ms");
  c.nonfinite_losses = rr.integer("nonfinite_losses");
  return c;
}

LabResult run_lab(const LabOptions& opt) {
  auto names = lab_configs(opt);
  PythonEnv py = find_python(opt.python);
  LabResult r;
  r.target = opt.target;
  r.python = py.python;
  ProgressBar bar("lab", int(names.size()), opt.progress);
  for (size_t i = 0; i < names.size(); ++i) {
    bar.start_config(int(i), names[i]);
    RunnerCall call;
    call.module = "trainscope_lab.lab_runner";
    call.args = {"--target", opt.target, "--config", names[i], "--device", opt.device, "--steps",
                 std::to_string(opt.steps), "--warmup", std::to_string(opt.warmup), "--seed",
                 std::to_string(opt.seed), "--clip", fmt::format("{}", opt.clip)};
    if (opt.batch_size > 0) call.args.insert(call.args.end(), {"--batch-size", std::to_string(opt.batch_size)});
    call.timeout_s = opt.timeout_s;
    RunnerResult rr = run_runner(py, call, &bar);
    // A target that cannot even be loaded fails every configuration the same way: say it once, now.
    if (rr.status == "error" && rr.has_json && rr.str("reason").rfind("TargetError", 0) == 0)
      throw UserError(rr.reason.substr(13));  // names the file or the factory already
    if (rr.has_json) {
      if (r.device.empty()) r.device = rr.str("device");
      if (r.device_name.empty()) r.device_name = rr.str("device_name");
      if (r.torch_version.empty()) r.torch_version = rr.str("torch_version");
      if (r.python_version.empty()) r.python_version = rr.str("python_version");
    }
    LabConfigResult c = summarise(names[i], rr);
    bar.end_config(c.ok() ? fmt::format("{:.1f} samples/s (spread {:.0f}%)", c.samples_per_s, c.spread_pct)
                          : fmt::format("{}: {}", c.status, c.reason));
    r.configs.push_back(std::move(c));
  }
  bar.finish();
  read_lab(r);
  diagnose::Evidence ev;
  ev.lab = lab_evidence(r);
  r.findings = diagnose::diagnose(ev).findings;
  return r;
}

}  // namespace ts::experiment
