#include "doctor/render.h"

#include <fmt/format.h>

#include "util/json_writer.h"

namespace ts::doctor {

Counts count(const std::vector<Check>& checks) {
  Counts c;
  for (const auto& k : checks) {
    switch (k.status) {
      case Status::pass: ++c.pass; break;
      case Status::warn: ++c.warn; break;
      case Status::fail: ++c.fail; break;
      case Status::skip: ++c.skip; break;
    }
  }
  return c;
}

std::string render_text(const DoctorFacts& f, const std::vector<Check>& checks, bool color, bool verbose) {
  auto paint = [&](Status s) -> std::string {
    const char* label = s == Status::pass ? "PASS" : s == Status::warn ? "WARN" : s == Status::fail ? "FAIL" : "SKIP";
    if (!color) return label;
    const char* code = s == Status::pass ? "32" : s == Status::warn ? "33" : s == Status::fail ? "31;1" : "2";
    return fmt::format("\033[{}m{}\033[0m", code, label);
  };
  std::string out;
  if (f.inspecting_pid)
    out += fmt::format("trainscope doctor: process {} on {}\n\n", f.process.pid, f.host.hostname);
  else
    out += fmt::format("trainscope doctor: {} on {}\n\n", f.python.python.empty() ? "python" : f.python.python,
                       f.host.hostname);
  size_t width = 0;
  for (const auto& c : checks) width = std::max(width, c.id.size());
  for (const auto& c : checks) {
    out += fmt::format(" {}  {:<{}}  {}\n", paint(c.status), c.id, width, c.summary);
    const bool detail = verbose || c.status == Status::warn || c.status == Status::fail;
    if (!detail) continue;
    const std::string pad(width + 9, ' ');
    for (const auto& [k, v] : c.evidence) out += fmt::format("{}{}: {}\n", pad, k, v);
    if (!c.fix.empty()) out += fmt::format("{}{}: {}\n", pad, color ? "\033[1mfix\033[0m" : "fix", c.fix);
  }
  Counts n = count(checks);
  out += fmt::format("\n{} pass, {} warn, {} fail, {} skip{}\n", n.pass, n.warn, n.fail, n.skip,
                     verbose ? "" : "  (--verbose shows the evidence of every check)");
  return out;
}

std::string render_json(const DoctorFacts& f, const std::vector<Check>& checks) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "trainscope.doctor/1");
  w.field("hostname", f.host.hostname);
  w.key("target").begin_object();
  if (f.inspecting_pid) w.field("pid", f.process.pid);
  else w.field("python", f.python.python).field("probe_pid", f.process.pid);
  w.end_object();
  w.key("host").begin_object();
  w.field("cpu_vendor", f.host.cpu_vendor).field("cpu_model", f.host.cpu_model);
  w.field("online_cpus", f.host.budget.online).field("affinity_cpus", f.host.budget.cores_usable);
  w.key("cgroup_cpus");
  if (f.host.budget.quota_cores > 0) w.value(f.host.budget.quota_cores);
  else w.null();
  w.field("usable_cores", f.host.budget.whole_cores());
  w.field("shm_total_bytes", f.host.shm_total_bytes).field("shm_free_bytes", f.host.shm_free_bytes);
  w.end_object();
  w.key("python").begin_object();
  w.field("ran", f.python.ran).field("python_version", f.python.python_version);
  w.field("torch_version", f.python.torch_version).field("torch_cuda", f.python.torch_cuda);
  w.field("cuda_available", f.python.cuda_available).field("num_threads", f.python.num_threads);
  w.field("numpy_version", f.python.numpy_version);
  w.end_object();
  w.key("runtimes").begin_array();
  for (const auto& r : f.process.runtimes)
    w.begin_object().field("kind", r.kind).field("vendor", r.vendor).field("path", r.path).end_object();
  w.end_array();
  w.key("nvidia").begin_object();
  w.field("driver_found", f.nvidia.driver_found).field("error", f.nvidia.error);
  w.field("driver_version", f.nvidia.driver_version).field("cuda_driver_version", f.nvidia.cuda_driver_version);
  w.field("gpus", static_cast<int>(f.nvidia.gpus.size()));
  w.end_object();
  w.key("checks").begin_array();
  for (const auto& c : checks) {
    w.begin_object();
    w.field("id", c.id).field("title", c.title).field("status", status_name(c.status)).field("summary", c.summary);
    w.key("evidence").begin_array();
    for (const auto& [k, v] : c.evidence) w.begin_object().field("name", k).field("value", v).end_object();
    w.end_array();
    w.field("fix", c.fix);
    w.end_object();
  }
  w.end_array();
  Counts n = count(checks);
  w.key("counts").begin_object().field("pass", n.pass).field("warn", n.warn).field("fail", n.fail).field("skip", n.skip).end_object();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace ts::doctor
