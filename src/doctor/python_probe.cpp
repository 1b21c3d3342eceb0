#include "doctor/python_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <simdjson.h>
#include <thread>

#include "doctor/probe_script.h"
#include "doctor/proc_inspect.h"

namespace ts::doctor {
namespace {

using Clock = std::chrono::steady_clock;

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// Last non-empty line of stderr: a Python traceback ends with the error itself.
std::string last_line(const std::string& s) {
  size_t end = s.find_last_not_of("\n ");
  if (end == std::string::npos) return {};
  size_t start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

void reap(pid_t pid) {
  auto deadline = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

bool parse_probe_json(const std::string& line, PythonFacts& p) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(line).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    p.error = "probe printed something that is not JSON: " + line.substr(0, 200);
    return false;
  }
  auto str = [&](const char* k, std::string& out) {
    std::string_view v;
    if (doc[k].get_string().get(v) == simdjson::SUCCESS) out = std::string(v);
  };
  auto integer = [&](const char* k, int& out) {
    int64_t v;
    if (doc[k].get_int64().get(v) == simdjson::SUCCESS) out = static_cast<int>(v);
  };
  auto boolean = [&](const char* k, bool& out) {
    bool v;
    if (doc[k].get_bool().get(v) == simdjson::SUCCESS) out = v;
  };
  p.ran = true;
  str("python", p.python);
  str("python_version", p.python_version);
  str("torch_version", p.torch_version);
  str("torch_error", p.torch_error);
  str("torch_dir", p.torch_dir);
  str("torch_cuda", p.torch_cuda);
  str("cuda_error", p.cuda_error);
  str("numpy_version", p.numpy_version);
  p.has_torch = !p.torch_version.empty();
  p.has_numpy = !p.numpy_version.empty();
  boolean("cuda_built", p.cuda_built);
  boolean("cuda_probe_ok", p.cuda_probe_ok);
  bool avail = false;
  if (doc["cuda_available"].get_bool().get(avail) == simdjson::SUCCESS) p.cuda_available = avail ? 1 : 0;
  integer("cuda_device_count", p.cuda_device_count);
  integer("num_threads", p.num_threads);
  integer("num_interop_threads", p.num_interop_threads);
  simdjson::dom::array devices;
  if (doc["devices"].get_array().get(devices) == simdjson::SUCCESS) {
    for (auto d : devices) {
      TorchDevice td;
      std::string_view name;
      if (d["name"].get_string().get(name) == simdjson::SUCCESS) td.name = std::string(name);
      simdjson::dom::array cap;
      if (d["capability"].get_array().get(cap) == simdjson::SUCCESS && cap.size() == 2) {
        int64_t a = -1, b = -1;
        if (cap.at(0).get_int64().get(a) != simdjson::SUCCESS) a = -1;
        if (cap.at(1).get_int64().get(b) != simdjson::SUCCESS) b = -1;
        td.major = static_cast<int>(a);
        td.minor = static_cast<int>(b);
      }
      p.devices.push_back(std::move(td));
    }
  }
  simdjson::dom::array archs;
  if (doc["arch_list"].get_array().get(archs) == simdjson::SUCCESS) {
    for (auto a : archs) {
      std::string_view s;
      if (a.get_string().get(s) == simdjson::SUCCESS) p.arch_list.emplace_back(s);
    }
  }
  return true;
}

ProbeResult run_python_probe(const std::string& python, double timeout_s) {
  ProbeResult r;
  r.python.python = python;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.python.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  pid_t pid = fork();
  if (pid < 0) {
    r.python.error = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    const char* argv[] = {python.c_str(), "-c", kProbeScript, nullptr};
    execvp(python.c_str(), const_cast<char* const*>(argv));
    dprintf(2, "cannot run %s: %s\n", python.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);

  std::string stdout_text, stderr_text;
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  bool out_open = true, err_open = true, timed_out = false;
  while (out_open && stdout_text.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], static_cast<short>(err_open ? POLLIN : 0), 0}};
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000))) < 0 && errno != EINTR) break;
    char buf[4096];
    if (fds[0].revents) {
      ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) out_open = false;
      else stdout_text.append(buf, static_cast<size_t>(n));
    }
    if (err_open && fds[1].revents) {
      ssize_t n = read(err[0], buf, sizeof(buf));
      if (n <= 0) err_open = false;
      else if (stderr_text.size() < 65536) stderr_text.append(buf, static_cast<size_t>(n));
    }
  }

  if (stdout_text.find('\n') != std::string::npos) {
    // The probe is alive and blocked on stdin: inspect it now.
    r.process = inspect_process(pid);
    r.host = read_host(pid);
    parse_probe_json(first_line(stdout_text), r.python);
    if (r.python.python.empty()) r.python.python = python;
  } else if (timed_out) {
    r.python.error = python + ": the probe printed nothing in " + std::to_string(static_cast<int>(timeout_s)) +
                     " s (importing torch hangs?)";
    kill(pid, SIGKILL);
  } else {
    std::string why = last_line(stderr_text);
    r.python.error = python + ": the probe failed" + (why.empty() ? std::string() : ": " + why);
  }
  if (r.host.hostname.empty()) r.host = read_host(getpid());
  // Release the probe and collect it.
  // The probe may have died already: a write to its closed stdin must not SIGPIPE us.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  (void)!write(in[1], "\n", 1);
  sigaction(SIGPIPE, &old, nullptr);
  close(in[1]);
  close(out[0]);
  close(err[0]);
  reap(pid);
  return r;
}

// The file `python3` resolves to on PATH ("" when none).
static std::string which_python3() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/python3";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

static bool same_file(const std::string& a, const std::string& b) {
  char ra[PATH_MAX], rb[PATH_MAX];
  return realpath(a.c_str(), ra) && realpath(b.c_str(), rb) && std::strcmp(ra, rb) == 0;
}

ProbeResult probe_default_python(double timeout_s) {
  ProbeResult debian;
  bool tried_debian = access("/usr/bin/python3", X_OK) == 0;
  if (tried_debian) {
    debian = run_python_probe("/usr/bin/python3", timeout_s);
    if (debian.python.has_torch) return debian;
    // python3 on PATH is the same interpreter: no second probe.
    std::string on_path = which_python3();
    if (on_path.empty() || same_file(on_path, "/usr/bin/python3")) return debian;
  }
  ProbeResult path = run_python_probe("python3", timeout_s);
  if (path.python.has_torch || !tried_debian) return path;
  // Neither imports torch: report Debian's (it ran), unless it did not run at all.
  return debian.python.ran || !path.python.ran ? debian : path;
}

}  // namespace ts::doctor
