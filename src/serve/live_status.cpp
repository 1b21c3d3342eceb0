#include "serve/live_status.h"

#include <dirent.h>
#include <fcntl.h>
#include <algorithm>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <simdjson.h>

#include "util/private_dir.h"

namespace ts::serve {

std::string default_live_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
    struct stat st;
    if (stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) return std::string(xdg) + "/trainscope/live";
  }
  return "/tmp/trainscope-" + std::to_string(getuid()) + "/live";
}

bool parse_live_status(const std::string& text, LiveStatus& s, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    error = "not JSON";
    return false;
  }
  std::string_view schema;
  if (doc["schema"].get_string().get(schema) != simdjson::SUCCESS || schema != "trainscope.live/1") {
    error = "schema is not trainscope.live/1";
    return false;
  }
  auto num = [](simdjson::dom::element e, double& out) {
    double d;
    int64_t i;
    uint64_t u;
    if (e.get_double().get(d) == simdjson::SUCCESS) out = d;
    else if (e.get_int64().get(i) == simdjson::SUCCESS) out = static_cast<double>(i);
    else if (e.get_uint64().get(u) == simdjson::SUCCESS) out = static_cast<double>(u);
  };
  auto field = [&](simdjson::dom::element obj, const char* k, double& out) {
    simdjson::dom::element e;
    if (obj[k].get(e) == simdjson::SUCCESS) num(e, out);
  };
  auto integer = [&](simdjson::dom::element obj, const char* k, int& out) {
    double d = NAN;
    field(obj, k, d);
    if (!std::isnan(d)) out = static_cast<int>(d);
  };
  auto str = [](simdjson::dom::element obj, const char* k, std::string& out) {
    std::string_view v;
    if (obj[k].get_string().get(v) == simdjson::SUCCESS) out = std::string(v);
  };
  integer(doc, "pid", s.pid);
  if (s.pid <= 0) {
    error = "no writer pid";
    return false;
  }
  integer(doc, "child_pid", s.child_pid);
  str(doc, "run_id", s.run_id);
  str(doc, "command", s.command);
  integer(doc, "rank", s.rank);
  integer(doc, "local_rank", s.local_rank);
  integer(doc, "world_size", s.world_size);
  field(doc, "started_unix", s.started_unix);
  field(doc, "updated_unix", s.updated_unix);
  field(doc, "stale_after_s", s.stale_after_s);
  field(doc, "steps_total", s.steps_total);
  field(doc, "samples_total", s.samples_total);
  field(doc, "data_wait_seconds_total", s.data_wait_seconds_total);
  simdjson::dom::element hist;
  if (doc["step_time_seconds"].get(hist) == simdjson::SUCCESS && hist.is_object()) {
    field(hist, "sum", s.step_seconds_sum);
    field(hist, "count", s.step_count);
    simdjson::dom::array buckets;
    if (hist["buckets"].get_array().get(buckets) == simdjson::SUCCESS) {
      for (auto b : buckets) {
        simdjson::dom::array pair;
        if (b.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2) continue;
        double le = NAN, n = NAN;
        std::string_view inf;
        if (pair.at(0).get_string().get(inf) == simdjson::SUCCESS) le = inf == "+Inf" ? INFINITY : NAN;
        else num(pair.at(0), le);
        num(pair.at(1), n);
        if (std::isnan(le) || std::isnan(n)) continue;
        s.step_buckets.emplace_back(le, n);
      }
    }
  }
  simdjson::dom::element win;
  if (doc["window"].get(win) == simdjson::SUCCESS && win.is_object()) {
    field(win, "seconds", s.window_seconds);
    field(win, "step_time_mean_s", s.step_time_mean_s);
    field(win, "data_wait_ratio", s.data_wait_ratio);
    field(win, "samples_per_second", s.samples_per_second);
  }
  simdjson::dom::element finding;
  if (doc["top_finding"].get(finding) == simdjson::SUCCESS && finding.is_object()) {
    str(finding, "id", s.finding_id);
    str(finding, "severity", s.finding_severity);
    str(finding, "title", s.finding_title);
    field(finding, "gain_ratio", s.finding_gain_ratio);
    s.has_finding = !s.finding_id.empty();
  }
  return true;
}

std::vector<LiveStatus> read_live_statuses(const std::string& dir, double now_unix,
                                           std::vector<std::string>* skipped) {
  std::vector<LiveStatus> out;
  // Only a folder of ours that no one else can write holds statuses we believe (the writer's rule).
  struct stat dst;
  if (::lstat(dir.c_str(), &dst) != 0) return out;  // no run has made it yet
  if (std::string problem = private_dir_problem(dir); !problem.empty()) {
    if (skipped) skipped->push_back(problem + "; live job metrics off");
    return out;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0 || name[0] == '.') continue;
    std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;  // removed between readdir and open (the run ended), or a symlink
    struct stat st;
    std::string text;
    // Our own regular files only: one planted while the folder was open to others is not ours.
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size < (1 << 20)) {
      text.resize(static_cast<size_t>(st.st_size));
      ssize_t n = ::read(fd, text.data(), text.size());
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    ::close(fd);
    LiveStatus s;
    s.file = path;
    std::string error;
    if (!parse_live_status(text, s, error)) {
      if (skipped) skipped->push_back(path + ": " + error);
      continue;
    }
    if (kill(s.pid, 0) != 0 && errno == ESRCH) continue;           // writer gone
    if (now_unix - s.updated_unix > s.stale_after_s) continue;     // writer stuck
    out.push_back(std::move(s));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const LiveStatus& a, const LiveStatus& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.rank < b.rank;
  });
  return out;
}

}  // namespace ts::serve
