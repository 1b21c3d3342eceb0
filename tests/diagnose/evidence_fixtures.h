#pragma once
// Hand-built evidence for rule tests: a trace analysis with N equal steps whose breakdown is
// given in milliseconds per step, so every expected number can be worked out by hand.
#include <string>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"

namespace ts::test {

// The finding with this id in a diagnosis, nullptr when it did not fire.
inline const diagnose::Finding* find(const diagnose::Diagnosis& d, const std::string& id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}
// One evidence value of a finding by name; -12345 (never a real value) when absent.
inline double ev_value(const diagnose::Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return -12345;
}

// A line of the user's code as the agent reports it: the file's absolute path, shown by its name.
inline diagnose::CodeSite code_site(const std::string& role, const std::string& file, int line) {
  diagnose::CodeSite s;
  s.role = role;
  s.file = file;
  s.path = file.substr(file.rfind('/') + 1);
  s.line = line;
  return s;
}

inline analysis::TraceAnalysis trace_with_steps(int n, double step_ms, double dataloader_ms, double kernel_ms) {
  analysis::TraceAnalysis t;
  t.path = "synthetic.json";
  t.device_name = "Tesla V100-SXM2-16GB";
  int64_t step_ns = int64_t(step_ms * 1e6);
  for (int i = 0; i < n; ++i) {
    analysis::Step s;
    s.number = i;
    s.start_ns = i * step_ns;
    s.end_ns = s.host_end_ns = (i + 1) * step_ns;
    s.breakdown.dataloader = int64_t(dataloader_ms * 1e6);
    s.breakdown.kernel = int64_t(kernel_ms * 1e6);
    s.breakdown.other = step_ns - s.breakdown.dataloader - s.breakdown.kernel;
    s.gpu_busy_ns = s.breakdown.kernel;
    t.steps.steps.push_back(s);
    t.steps.total.dataloader += s.breakdown.dataloader;
    t.steps.total.kernel += s.breakdown.kernel;
    t.steps.total.other += s.breakdown.other;
  }
  t.steps.total_ns = step_ns * n;
  t.steps.median_step_ns = t.steps.mean_step_ns = t.steps.p90_step_ns = step_ns;
  t.gpu.present = true;
  t.gpu.devices = 1;
  t.gpu.span_ns = t.steps.total_ns;
  t.gpu.busy_ns = t.gpu.compute_ns = t.steps.total.kernel;
  t.gpu.idle_ns = t.gpu.span_ns - t.gpu.busy_ns;
  t.gpu.idle_pct = 100.0 * t.gpu.idle_ns / t.gpu.span_ns;
  t.gpu.compute_pct = 100 - t.gpu.idle_pct;
  t.gpu.utilization_pct = 100.0 * kernel_ms / step_ms;
  t.kernels.count = 300 * n;
  t.kernels.per_step = 300;
  t.kernels.total_ns = t.steps.total.kernel;
  t.kernels.median_ns = 50000;
  t.kernels.under_10us_pct = 10;
  return t;
}

// A loop that waits 70 of every 100 ms for a FakeData loader (32 samples x 2 ms = 64 ms per batch,
// num_workers=0) on an 8-core host at 15% CPU; the consumer's time is set by each test.
inline diagnose::Evidence starved_loop() {
  diagnose::Evidence ev;
  diagnose::AgentEvidence a;
  a.steps = 50;
  a.step_ms = 100;
  a.data_wait_ms = 70;
  a.data_wait_pct = 70;
  a.sample_getitem_ms = 2;
  a.collate_ms = 0;
  a.loaders.push_back({"FakeData", 32, 0, false, -1, false});
  ev.agent = a;
  diagnose::SamplesEvidence s;
  s.cpu_cores = 8;
  s.host_cpu_mean_pct = 15;
  ev.samples = s;
  return ev;
}

}  // namespace ts::test
