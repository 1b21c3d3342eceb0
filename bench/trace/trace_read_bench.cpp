// Trace reader benchmark: read_trace on a large .json and .json.gz, and Python's json.load
// (Debian's /usr/bin/python3) on the same .json, each in its own child process so peak RSS
// is per reader. Prints MB/s of uncompressed JSON (wall and CPU time, one thread), peak RSS,
// and the ratio to json.load measured in the same run; with a .json first, also json_cut_off
// (the bracket count a job's traces get) against read_trace.
//
// Usage: trace_read_bench TRACE.json [TRACE.json.gz] [--runs N] [--no-python]
//        trace_read_bench --parse-cpu N TRACE.json...
//
// --parse-cpu: the parser's own speed on one core, free of page faults and of the file: each
// trace is loaded into memory once, then parsed serially (parse_trace) N times in this process;
// prints the least CPU time of a parse, as MB/s per core, against a baseline measured in
// the same run on the same bytes (one pass counting quotes: the cost of touching every byte).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/written_whole.h"
#include "util/error.h"

namespace {

struct Result {
  double wall_s = 0, cpu_s = 0;
  uint64_t bytes = 0, events = 0;
  long max_rss_kb = 0;
  bool ok = false;
};

double cpu_seconds(const rusage& r) {
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

// Runs `fn` in a child; the child writes "wall bytes events" to a pipe.
template <class F>
Result in_child(F&& fn) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string line = fn();
    (void)!write(fds[1], line.data(), line.size());
    _exit(line.empty() ? 1 : 0);
  }
  close(fds[1]);
  char buf[256] = {};
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Result r;
  r.cpu_s = cpu_seconds(ru);
  r.max_rss_kb = ru.ru_maxrss;
  unsigned long long bytes = 0, events = 0;
  r.ok = n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         std::sscanf(buf, "%lf %llu %llu", &r.wall_s, &bytes, &events) == 3;
  r.bytes = bytes;
  r.events = events;
  return r;
}

Result bench_reader(const std::string& path, int runs) {
  Result best;
  for (int i = 0; i < runs; ++i) {
    Result r = in_child([&] {
      try {
        auto t0 = std::chrono::steady_clock::now();
        ts::trace::EventStore s = ts::trace::read_trace(path);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        char line[128];
        std::snprintf(line, sizeof line, "%.6f %llu %llu", wall, (unsigned long long)s.meta.input_bytes,
                      (unsigned long long)s.events_read());
        return std::string(line);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return std::string();
      }
    });
    if (!r.ok) return r;
    if (!best.ok || r.cpu_s < best.cpu_s) {
      long rss = std::max(best.max_rss_kb, r.max_rss_kb);
      best = r;
      best.max_rss_kb = rss;
    }
  }
  return best;
}

// json_cut_off: the whole-file bracket count `report` and `analyze` run on a job's traces.
Result bench_cut_check(const std::string& path, int runs) {
  Result best;
  for (int i = 0; i < runs; ++i) {
    Result r = in_child([&] {
      try {
        auto t0 = std::chrono::steady_clock::now();
        const bool cut = ts::trace::json_cut_off(path);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        char line[128];
        std::snprintf(line, sizeof line, "%.6f %llu %d", wall, (unsigned long long)std::filesystem::file_size(path),
                      cut ? 1 : 0);
        return std::string(line);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return std::string();
      }
    });
    if (!r.ok) return r;
    if (!best.ok || r.cpu_s < best.cpu_s) best = r;
  }
  return best;
}

Result bench_python(const std::string& path) {
  return in_child([&] {
    const char* code =
        "import json,os,sys,time\n"
        "t=time.perf_counter()\n"
        "with open(sys.argv[1],'rb') as f: d=json.load(f)\n"
        "w=time.perf_counter()-t\n"
        "ev=d if isinstance(d,list) else d['traceEvents']\n"
        "sys.stdout.write('%.6f %d %d'%(w,os.path.getsize(sys.argv[1]),len(ev)))\n";
    int fds[2];
    if (pipe(fds) != 0) return std::string();
    pid_t py = fork();
    if (py == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl("/usr/bin/python3", "python3", "-c", code, path.c_str(), (char*)nullptr);
      _exit(127);
    }
    close(fds[1]);
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    int st;
    waitpid(py, &st, 0);
    return (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? out : std::string();
  });
}

void print(const char* what, const Result& r) {
  if (!r.ok) {
    std::printf("%-28s failed\n", what);
    return;
  }
  std::printf("%-28s %9.0f MB  %9llu events  wall %7.3f s %8.1f MB/s  cpu %7.3f s %8.1f MB/s  peak RSS %7.1f MB\n",
              what, r.bytes / 1e6, (unsigned long long)r.events, r.wall_s, r.bytes / r.wall_s / 1e6, r.cpu_s,
              r.bytes / r.cpu_s / 1e6, r.max_rss_kb / 1024.0);
}

// This thread's CPU time (user and system: after the first parse the store's memory is reused,
// so little of it is page faults), to the nanosecond where getrusage counts in ticks.
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int parse_cpu(const std::vector<std::string>& files, int runs) {
  std::printf("parser CPU on one core (least thread CPU time of %d in-memory parses; baseline: one pass counting quotes)\n",
              runs);
  for (const std::string& path : files) {
    std::string json;
    {
      FILE* f = std::fopen(path.c_str(), "rb");
      if (!f) {
        std::fprintf(stderr, "%s: cannot open\n", path.c_str());
        return 1;
      }
      char buf[1 << 16];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) json.append(buf, n);
      std::fclose(f);
    }
    double base = 1e9, best = 1e9;
    size_t quotes = 0, events = 0;
    for (int i = 0; i < runs; ++i) {
      double t0 = thread_cpu_s();
      size_t q = 0;
      for (const char* p = json.data(); (p = static_cast<const char*>(std::memchr(p, '"', json.data() + json.size() - p)));
           ++p)
        ++q;
      base = std::min(base, thread_cpu_s() - t0);
      quotes = q;
      t0 = thread_cpu_s();
      try {
        events = ts::trace::parse_trace(json, path).events_read();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
      }
      best = std::min(best, thread_cpu_s() - t0);
    }
    std::printf("%-40s %7.1f MB %9zu events  parse %7.4f s %7.1f MB/s %6.0f ns/event   baseline %7.4f s %7.1f MB/s "
                "(%zu quotes)  parse/baseline %.1fx\n",
                path.substr(path.find_last_of('/') + 1).c_str(), json.size() / 1e6, events, best,
                json.size() / best / 1e6, best / events * 1e9, base, json.size() / base / 1e6, quotes, best / base);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int runs = 3;
  bool python = true;
  int parse_runs = 0;
  const char* usage =
      "usage: trace_read_bench TRACE.json [TRACE.json.gz] [--runs N] [--no-python]\n"
      "       trace_read_bench --parse-cpu N TRACE.json...\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("%s", usage);
      return 0;
    }
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--parse-cpu") && i + 1 < argc) parse_runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-python")) python = false;
    else if (argv[i][0] == '-') {
      std::fprintf(stderr, "trace_read_bench: unknown option %s\n%s", argv[i], usage);
      return 2;
    } else files.push_back(argv[i]);
  }
  if (files.empty()) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  if (parse_runs > 0) return parse_cpu(files, parse_runs);
  std::printf("trace reader benchmark (best of %d runs each; cpu = user+sys of the reading process)\n", runs);
  Result plain = bench_reader(files[0], runs);
  print("trainscope read_trace .json", plain);
  if (files[0].ends_with(".json")) {
    Result cut = bench_cut_check(files[0], runs);
    if (cut.ok && plain.ok)
      std::printf("json_cut_off .json: %.4f s wall, %.4f s cpu, %.0f MB/s (read_trace/json_cut_off: %.1fx wall)\n",
                  cut.wall_s, cut.cpu_s, cut.bytes / cut.wall_s / 1e6, plain.wall_s / cut.wall_s);
  }
  for (size_t i = 1; i < files.size(); ++i) print("trainscope read_trace .gz", bench_reader(files[i], runs));
  if (python && plain.ok) {
    Result py = bench_python(files[0]);
    py.cpu_s = py.cpu_s;  // cpu from wait4 covers the interpreter start too (~0.05 s)
    print("python3 json.load .json", py);
    if (py.ok)
      std::printf("ratio: read_trace is %.1fx faster than json.load (wall), %.1fx (cpu); peak RSS %.1f MB vs %.1f MB "
                  "(input %.1f MB)\n",
                  py.wall_s / plain.wall_s, py.cpu_s / plain.cpu_s, plain.max_rss_kb / 1024.0, py.max_rss_kb / 1024.0,
                  plain.bytes / 1e6);
  }
  return plain.ok ? 0 : 1;
}
