#pragma once
// Parsers for the /proc and cgroup files the host sampler reads (proc(5), cgroup v1/v2).
// Each parser takes the file's text, so tests can feed crafted contents; read_text() reads
// a file in one go and tells a missing file (a process that exited) from an empty one.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/readings.h"

namespace ts::sample::procfs {

// Whole file into `out`; false when it cannot be opened or read (gone, no permission).
bool read_text(const std::string& path, std::string& out);

// /proc/stat: "cpu" (aggregate) then "cpuN" lines. busy = total - idle - iowait (ticks).
struct CpuTimes {
  int core = -1;  // -1: the aggregate line
  uint64_t busy = 0, total = 0;
};
std::vector<CpuTimes> parse_stat(std::string_view text);

// /proc/PID/stat: comm is split off at the *last* ')' because it may hold spaces and ')'.
struct PidStat {
  pid_t pid = 0, ppid = 0;
  std::string comm;
  char state = '?';
  uint64_t utime = 0, stime = 0;  // clock ticks
  uint64_t minflt = 0;             // minor page faults (a fresh page mapped and zeroed, no I/O)
  // The same, of the children it has waited for (each with its own waited-for children): what
  // the kernel adds to a parent when it reaps a child (proc(5) cutime, cstime, cminflt).
  uint64_t cutime = 0, cstime = 0, cminflt = 0;
  int num_threads = 0;
  uint64_t starttime = 0;  // ticks after boot: tells a reused PID from the old process
  int64_t rss_pages = 0;
  int last_cpu = -1;
};
std::optional<PidStat> parse_pid_stat(std::string_view text);

// /proc/uptime's first field: seconds since boot, the clock of PidStat::starttime (-1: unreadable).
double parse_uptime(std::string_view text);

// /proc/PID/status.
struct PidStatus {
  int threads = 0;
  uint64_t voluntary_switches = 0, nonvoluntary_switches = 0;
  std::string cpus_allowed_list;
};
PidStatus parse_pid_status(std::string_view text);

// /proc/PID/io (read_bytes/write_bytes: what reached storage).
struct PidIo {
  double read_bytes = -1, write_bytes = -1;
};
PidIo parse_pid_io(std::string_view text);

// /proc/PID/schedstat: "on-cpu-ns run-queue-wait-ns timeslices".
struct SchedStat {
  uint64_t on_cpu_ns = 0, wait_ns = 0, timeslices = 0;
  bool ok = false;
};
SchedStat parse_schedstat(std::string_view text);

// /proc/meminfo: MemTotal and MemAvailable in bytes.
struct MemInfo {
  double total_bytes = -1, available_bytes = -1;
};
MemInfo parse_meminfo(std::string_view text);

// /proc/vmstat's oom_kill: the processes the kernel's OOM killer has killed since boot, host-wide
// (Linux 4.13 on), -1 where the line is missing.
int64_t parse_vmstat_oom_kills(std::string_view text);
// The same, read now (-1: unreadable, or a kernel without the counter).
int64_t read_oom_kills();

// /proc/pressure/cpu "some avg10=.. avg60=.. avg300=.. total=.." line.
PressureReading parse_pressure(std::string_view text);

// cgroup v2 cpu.max ("max 100000" or "200000 100000"): cores, or -1 for no limit.
double parse_cpu_max(std::string_view text);
// "0-3,8,10-11" -> 7.
int count_cpu_list(std::string_view list);

// The space-separated PIDs of /proc/PID/task/TID/children.
std::vector<pid_t> parse_children(std::string_view text);

}  // namespace ts::sample::procfs
