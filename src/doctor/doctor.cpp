#include "doctor/doctor.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <regex>

#include "doctor/nvidia_facts.h"
#include "doctor/proc_inspect.h"
#include "doctor/python_probe.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace ts::doctor {
namespace {

void say(const DoctorOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

TorchFromMaps parse_torch_version_py(const std::string& text) {
  TorchFromMaps t;
  // version.py: "__version__ = '2.4.1+cu121'" and "cuda: Optional[str] = '12.1'" (or "cuda = None").
  static const std::regex ver(R"(__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"])");
  static const std::regex cuda(R"((?:^|\n)cuda\s*(?::[^=]*)?=\s*['"]([^'"]+)['"])");
  std::smatch m;
  if (std::regex_search(text, m, ver)) t.version = m[1];
  if (std::regex_search(text, m, cuda)) t.cuda = m[1];
  return t;
}

TorchFromMaps torch_from_maps(const std::vector<std::string>& libraries) {
  for (const auto& lib : libraries) {
    auto at = lib.rfind("/torch/_C");
    if (at == std::string::npos) continue;
    std::string dir = lib.substr(0, at + 6);
    std::string text;
    if (!read_small_file(dir + "/version.py", text)) continue;
    TorchFromMaps t = parse_torch_version_py(text);
    t.dir = dir;
    return t;
  }
  return {};
}

DoctorFacts collect_facts(const DoctorOptions& opt) {
  DoctorFacts f;
  if (opt.pid > 0) {
    if (kill(opt.pid, 0) != 0 && errno == ESRCH)
      throw UserError(fmt::format("--pid {}: no such process", opt.pid));
    f.inspecting_pid = true;
    say(opt, fmt::format("reading /proc/{} (maps, environ, threads, process tree)", opt.pid));
    f.process = inspect_process(opt.pid);
    f.host = read_host(opt.pid);
    auto t = torch_from_maps(f.process.libraries);
    f.python.torch_version = t.version;
    f.python.torch_cuda = t.cuda;
    f.python.torch_dir = t.dir;
    f.python.has_torch = !t.version.empty();
    f.python.cuda_built = !t.cuda.empty();
    std::vector<int> pids{opt.pid};
    for (const auto& c : f.process.tree) pids.push_back(c.pid);
    say(opt, fmt::format("measuring the threads of {} process{} for {:.1f} s", pids.size(),
                         pids.size() == 1 ? "" : "es", opt.oversubscription_window_s));
    f.oversubscription = sample::measure_oversubscription(pids, opt.oversubscription_window_s, f.host.budget.effective());
  } else {
    say(opt, opt.python.empty() ? "probing Python (import torch, numpy; a matmul on CUDA if present)"
                                : "probing " + opt.python + " (import torch, numpy; a matmul on CUDA if present)");
    ProbeResult r = opt.python.empty() ? probe_default_python(opt.probe_timeout_s)
                                       : run_python_probe(opt.python, opt.probe_timeout_s);
    f.python = std::move(r.python);
    f.process = std::move(r.process);
    f.host = r.host.hostname.empty() ? read_host(getpid()) : std::move(r.host);
    if (!f.process.readable && f.process.read_error.empty())
      f.process.read_error = "the Python probe did not run";
  }
  say(opt, "reading the NVIDIA driver (NVML) and the kernel log");
  f.nvidia = read_nvidia(opt.nvml_library);
  return f;
}

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
  w.field("online_cpus", f.host.budget.online).field("affinity_cpus", f.host.budget.affinity);
  w.key("cgroup_cpus");
  if (f.host.budget.cgroup_cpus > 0) w.value(f.host.budget.cgroup_cpus);
  else w.null();
  w.field("usable_cores", f.host.budget.effective());
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
