#include "sample/procfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

namespace ts::sample::procfs {

namespace {

// Next whitespace-separated token of `s` from `pos`.
std::string_view next_token(std::string_view s, size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n')) ++pos;
  size_t start = pos;
  while (pos < s.size() && s[pos] != ' ' && s[pos] != '\t' && s[pos] != '\n') ++pos;
  return s.substr(start, pos - start);
}

template <class T>
bool to_num(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

double to_double(std::string_view s) {
  std::string tmp(s);
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  return end == tmp.c_str() ? -1 : v;
}

// Calls fn(line) for each line.
template <class F>
void for_lines(std::string_view text, F fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    fn(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

// Value after "Key:" in a status-style line, trimmed.
bool key_value(std::string_view line, std::string_view key, std::string_view& value) {
  if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':')
    return false;
  value = line.substr(key.size() + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
  return true;
}

}  // namespace

bool read_text(const std::string& path, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  bool ok = true;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      ok = false;  // ESRCH: the process exited after open
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok;
}

std::vector<CpuTimes> parse_stat(std::string_view text) {
  std::vector<CpuTimes> out;
  for_lines(text, [&](std::string_view line) {
    if (line.size() < 4 || line.substr(0, 3) != "cpu") return;
    size_t pos = 0;
    std::string_view name = next_token(line, pos);
    CpuTimes c;
    if (name.size() > 3 && !to_num(name.substr(3), c.core)) return;
    uint64_t v[10] = {};
    int n = 0;
    for (; n < 10; ++n) {
      std::string_view t = next_token(line, pos);
      if (t.empty() || !to_num(t, v[n])) break;
    }
    if (n < 4) return;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is
    // already inside user/nice, so it is not added again.
    uint64_t total = 0;
    for (int i = 0; i < n && i < 8; ++i) total += v[i];
    uint64_t idle = v[3] + (n > 4 ? v[4] : 0);
    c.total = total;
    c.busy = total - idle;
    out.push_back(c);
  });
  return out;
}

std::optional<PidStat> parse_pid_stat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  PidStat s;
  std::string_view pid_s = text.substr(0, open);
  while (!pid_s.empty() && pid_s.back() == ' ') pid_s.remove_suffix(1);
  if (!to_num(pid_s, s.pid)) return std::nullopt;
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  // Fields after comm start at field 3 (state).
  std::string_view rest = text.substr(close + 1);
  size_t pos = 0;
  std::string_view f[40];
  int n = 0;
  for (; n < 40; ++n) {
    f[n] = next_token(rest, pos);
    if (f[n].empty()) break;
  }
  // f[0] = field 3 (state); field k is f[k-3].
  if (n < 22) return std::nullopt;
  s.state = f[0].empty() ? '?' : f[0][0];
  bool ok = to_num(f[4 - 3], s.ppid) && to_num(f[14 - 3], s.utime) && to_num(f[15 - 3], s.stime) &&
            to_num(f[20 - 3], s.num_threads) && to_num(f[22 - 3], s.starttime);
  if (!ok) return std::nullopt;
  to_num(f[10 - 3], s.minflt);
  to_num(f[11 - 3], s.cminflt);
  to_num(f[16 - 3], s.cutime);
  to_num(f[17 - 3], s.cstime);
  if (n > 24 - 3) to_num(f[24 - 3], s.rss_pages);
  if (n > 39 - 3) to_num(f[39 - 3], s.last_cpu);
  return s;
}

double parse_uptime(std::string_view text) {
  size_t pos = 0;
  std::string_view first = next_token(text, pos);
  return first.empty() ? -1 : to_double(first);
}

PidStatus parse_pid_status(std::string_view text) {
  PidStatus s;
  for_lines(text, [&](std::string_view line) {
    std::string_view v;
    if (key_value(line, "Threads", v)) to_num(v, s.threads);
    else if (key_value(line, "voluntary_ctxt_switches", v)) to_num(v, s.voluntary_switches);
    else if (key_value(line, "nonvoluntary_ctxt_switches", v)) to_num(v, s.nonvoluntary_switches);
    else if (key_value(line, "Cpus_allowed_list", v)) s.cpus_allowed_list = std::string(v);
  });
  return s;
}

PidIo parse_pid_io(std::string_view text) {
  PidIo io;
  for_lines(text, [&](std::string_view line) {
    std::string_view v;
    uint64_t n = 0;
    if (key_value(line, "read_bytes", v) && to_num(v, n)) io.read_bytes = static_cast<double>(n);
    else if (key_value(line, "write_bytes", v) && to_num(v, n)) io.write_bytes = static_cast<double>(n);
  });
  return io;
}

SchedStat parse_schedstat(std::string_view text) {
  SchedStat s;
  size_t pos = 0;
  s.ok = to_num(next_token(text, pos), s.on_cpu_ns) && to_num(next_token(text, pos), s.wait_ns);
  to_num(next_token(text, pos), s.timeslices);
  return s;
}

MemInfo parse_meminfo(std::string_view text) {
  MemInfo m;
  for_lines(text, [&](std::string_view line) {
    std::string_view v;
    double* dst = nullptr;
    if (key_value(line, "MemTotal", v)) dst = &m.total_bytes;
    else if (key_value(line, "MemAvailable", v)) dst = &m.available_bytes;
    if (!dst) return;
    size_t pos = 0;
    uint64_t kb = 0;
    if (to_num(next_token(v, pos), kb)) *dst = static_cast<double>(kb) * 1024.0;
  });
  return m;
}

int64_t parse_vmstat_oom_kills(std::string_view text) {
  int64_t out = -1;
  for_lines(text, [&](std::string_view line) {
    size_t pos = 0;
    if (next_token(line, pos) != "oom_kill") return;
    uint64_t n = 0;
    if (to_num(next_token(line, pos), n)) out = static_cast<int64_t>(n);
  });
  return out;
}

int64_t read_oom_kills() {
  std::string text;
  return read_text("/proc/vmstat", text) ? parse_vmstat_oom_kills(text) : -1;
}

PressureReading parse_pressure(std::string_view text) {
  PressureReading p;
  for_lines(text, [&](std::string_view line) {
    size_t pos = 0;
    if (next_token(line, pos) != "some") return;
    for (std::string_view t = next_token(line, pos); !t.empty(); t = next_token(line, pos)) {
      size_t eq = t.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = t.substr(0, eq), v = t.substr(eq + 1);
      if (k == "avg10") p.avg10 = to_double(v);
      else if (k == "avg60") p.avg60 = to_double(v);
      else if (k == "total") p.total_us = to_double(v);
    }
  });
  return p;
}

double parse_cpu_max(std::string_view text) {
  size_t pos = 0;
  std::string_view quota = next_token(text, pos), period = next_token(text, pos);
  if (quota.empty() || quota == "max") return -1;
  double q = 0, p = 100000;
  if (!to_num(quota, q)) return -1;
  if (!period.empty() && !to_num(period, p)) return -1;
  return p > 0 && q > 0 ? q / p : -1;
}

int count_cpu_list(std::string_view list) {
  int n = 0;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view part = list.substr(0, comma);
    while (!part.empty() && (part.back() == '\n' || part.back() == ' ')) part.remove_suffix(1);
    size_t dash = part.find('-');
    int a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (to_num(part, a)) ++n;
    } else if (to_num(part.substr(0, dash), a) && to_num(part.substr(dash + 1), b) && b >= a) {
      n += b - a + 1;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return n;
}

std::vector<pid_t> parse_children(std::string_view text) {
  std::vector<pid_t> out;
  size_t pos = 0;
  for (std::string_view t = next_token(text, pos); !t.empty(); t = next_token(text, pos)) {
    pid_t p = 0;
    if (to_num(t, p)) out.push_back(p);
  }
  return out;
}

}  // namespace ts::sample::procfs
