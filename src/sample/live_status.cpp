#include "sample/live_status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <simdjson.h>

#include "util/json_writer.h"

namespace ts::sample {

std::string live_dir() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
    struct stat st;
    if (stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) return std::string(xdg) + "/trainscope/live";
  }
  return "/tmp/trainscope-" + std::to_string(getuid()) + "/live";
}

std::string live_status_json(const LiveStatus& s) {
  JsonWriter w(false);
  w.begin_object();
  w.field("schema", kLiveSchema);
  w.field("pid", s.pid);
  if (s.child_pid >= 0) w.field("child_pid", s.child_pid);
  if (!s.run_id.empty()) w.field("run_id", s.run_id);
  if (!s.job.empty()) w.field("job", s.job);
  if (!s.node.empty()) w.field("node", s.node);
  w.field("command", s.command);
  if (s.rank >= 0) {
    w.field("rank", s.rank);
    if (s.local_rank >= 0) w.field("local_rank", s.local_rank);
    w.field("world_size", s.world_size);
  }
  // Whole seconds: the JSON writer keeps 6 significant digits, too few for a Unix time.
  w.field("started_unix", static_cast<int64_t>(s.started_unix));
  w.field("updated_unix", static_cast<int64_t>(s.updated_unix));
  if (s.steps_total >= 0) w.field("steps_total", s.steps_total);
  if (s.samples_total >= 0) w.field("samples_total", s.samples_total);
  if (s.data_wait_seconds_total >= 0) w.field("data_wait_seconds_total", s.data_wait_seconds_total);
  if (!s.step_buckets.empty()) {
    w.key("step_time_seconds").begin_object();
    w.key("buckets").begin_array();
    for (const auto& [le, n] : s.step_buckets) {
      w.begin_array();
      if (std::isinf(le)) w.value("+Inf");
      else w.value(le);
      w.value(static_cast<int64_t>(n)).end_array();
    }
    w.end_array();
    w.field("sum", s.step_seconds_sum);
    w.field("count", s.step_count);
    w.end_object();
  }
  if (s.window_steps > 0) {
    w.key("window").begin_object();
    w.field("seconds", s.window_seconds);
    w.field("steps", s.window_steps);
    w.field("step_time_mean_s", s.step_time_mean_s);
    w.field("data_wait_ratio", s.data_wait_ratio);
    if (s.samples_per_second >= 0) w.field("samples_per_second", s.samples_per_second);
    w.end_object();
  }
  if (s.has_finding) {
    w.key("top_finding").begin_object();
    w.field("id", s.finding_id);
    w.field("severity", s.finding_severity);
    w.field("title", s.finding_title);
    if (s.finding_gain_ratio >= 0) w.field("gain_ratio", s.finding_gain_ratio);
    w.end_object();
  }
  w.end_object();
  return w.take();
}

bool parse_live_status(const std::string& text, LiveStatus& s, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    error = "not JSON";
    return false;
  }
  std::string_view schema;
  if (doc["schema"].get_string().get(schema) != simdjson::SUCCESS || schema != kLiveSchema) {
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
  auto count = [&](simdjson::dom::element obj, const char* k, int64_t& out) {
    double d = NAN;
    field(obj, k, d);
    if (!std::isnan(d)) out = static_cast<int64_t>(d);
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
  str(doc, "job", s.job);
  str(doc, "node", s.node);
  str(doc, "command", s.command);
  integer(doc, "rank", s.rank);
  integer(doc, "local_rank", s.local_rank);
  integer(doc, "world_size", s.world_size);
  field(doc, "started_unix", s.started_unix);
  field(doc, "updated_unix", s.updated_unix);
  field(doc, "stale_after_s", s.stale_after_s);
  count(doc, "steps_total", s.steps_total);
  count(doc, "samples_total", s.samples_total);
  field(doc, "data_wait_seconds_total", s.data_wait_seconds_total);
  simdjson::dom::element hist;
  if (doc["step_time_seconds"].get(hist) == simdjson::SUCCESS && hist.is_object()) {
    field(hist, "sum", s.step_seconds_sum);
    count(hist, "count", s.step_count);
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
    count(win, "steps", s.window_steps);
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

}  // namespace ts::sample
