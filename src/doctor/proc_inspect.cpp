#include "doctor/proc_inspect.h"

#include <dirent.h>
#include <sched.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>

#include "sample/debug_switches.h"
#include "sample/runtime_libraries.h"

namespace ts::doctor {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::vector<int> list_pids() {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    auto r = std::from_chars(e->d_name, e->d_name + std::strlen(e->d_name), pid);
    if (r.ec == std::errc() && *r.ptr == '\0') pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

// /proc/PID/stat: comm sits in parentheses and may hold spaces or ')': split after the last ')'.
bool read_stat(int pid, ChildProcess& out) {
  std::string text;
  if (!read_small_file("/proc/" + std::to_string(pid) + "/stat", text)) return false;
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  out.pid = pid;
  out.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  // After comm: 3 state, 4 ppid, ..., 20 num_threads (1-based as in proc(5)).
  for (int i = 3; i <= 20 && rest >> field; ++i) {
    if (i == 4) out.ppid = std::atoi(field.c_str());
    if (i == 20) out.threads = std::atoi(field.c_str());
  }
  return out.ppid >= 0;
}

}  // namespace

bool read_small_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return !f.bad();
}

std::map<std::string, std::string> parse_environ(std::string_view environ,
                                                 const std::vector<std::string>& keys) {
  std::map<std::string, std::string> out;
  while (!environ.empty()) {
    auto nul = environ.find('\0');
    std::string_view kv = environ.substr(0, nul);
    environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string key(kv.substr(0, eq));
    if (!keys.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    out[key] = std::string(kv.substr(eq + 1));
  }
  return out;
}

const std::vector<std::string>& interesting_env_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {
      "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
      "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "KMP_AFFINITY",
      "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "CUDA_VISIBLE_DEVICES",
      "CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF", "NCCL_DEBUG", "NCCL_P2P_DISABLE",
      "NCCL_IB_DISABLE", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"};
    for (const auto& d : sample::debug_switch_keys())  // doctor's debug-env reads them
      if (std::find(k.begin(), k.end(), d) == k.end()) k.push_back(d);
    return k;
  }();
  return keys;
}

std::vector<ChildProcess> process_descendants(int pid) {
  std::vector<ChildProcess> all;
  for (int p : list_pids()) {
    ChildProcess c;
    if (read_stat(p, c)) all.push_back(std::move(c));
  }
  std::vector<ChildProcess> out;
  std::deque<int> todo{pid};
  std::set<int> seen{pid};
  while (!todo.empty()) {
    int parent = todo.front();
    todo.pop_front();
    for (const auto& c : all) {
      if (c.ppid == parent && seen.insert(c.pid).second) {
        out.push_back(c);
        todo.push_back(c.pid);
      }
    }
  }
  return out;
}

ProcessFacts inspect_process(int pid) {
  ProcessFacts f;
  f.pid = pid;
  const std::string base = "/proc/" + std::to_string(pid);
  std::string maps, environ;
  if (!read_small_file(base + "/maps", maps) || maps.empty()) {
    f.read_error = (errno == EACCES || errno == EPERM)
                       ? base + "/maps: permission denied (run as the job's user or root)"
                       : base + "/maps: " + (access(base.c_str(), F_OK) != 0 ? "no such process"
                                                                                : "not readable");
  } else {
    f.readable = true;
    f.libraries = sample::parse_maps_libraries(maps);
    f.runtimes = sample::classify_runtimes(f.libraries);
  }
  if (read_small_file(base + "/environ", environ)) f.env = parse_environ(environ, interesting_env_keys());

  DIR* d = opendir((base + "/task").c_str());
  if (d) {
    f.threads = 0;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string comm;
      if (!read_small_file(base + "/task/" + e->d_name + "/comm", comm)) continue;
      ++f.threads;
      ++f.thread_names[std::string(trim(comm))];
    }
    closedir(d);
  }
  f.tree = process_descendants(pid);
  return f;
}

HostFacts read_host(int pid) {
  HostFacts h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  std::string cpuinfo;
  if (read_small_file("/proc/cpuinfo", cpuinfo)) std::tie(h.cpu_vendor, h.cpu_model) = sample::parse_cpuinfo(cpuinfo);
  h.budget = sample::read_cpu_budget(pid);
  struct statvfs sv;
  if (statvfs("/dev/shm", &sv) == 0) {
    h.shm_total_bytes = static_cast<int64_t>(sv.f_blocks) * static_cast<int64_t>(sv.f_frsize);
    h.shm_free_bytes = static_cast<int64_t>(sv.f_bavail) * static_cast<int64_t>(sv.f_frsize);
  }
  return h;
}

}  // namespace ts::doctor
