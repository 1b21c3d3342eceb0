#include "doctor/doctor.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <regex>

#include "doctor/nvidia_facts.h"
#include "doctor/proc_inspect.h"
#include "doctor/python_probe.h"
#include "util/error.h"

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
    f.oversubscription = sample::measure_oversubscription(pids, opt.oversubscription_window_s, f.host.budget.whole_cores());
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

}  // namespace ts::doctor
