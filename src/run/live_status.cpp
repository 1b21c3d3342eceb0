#include "run/live_status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "util/json_writer.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {
constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
constexpr double kWindowS = 10;
}  // namespace

std::string live_dir() {
  const char* x = std::getenv("XDG_RUNTIME_DIR");
  std::error_code ec;
  if (x && *x && fs::is_directory(x, ec)) return std::string(x) + "/trainscope/live";
  return fmt::format("/tmp/trainscope-{}/live", getuid());
}

LiveStatusWriter::LiveStatusWriter(std::string dir, pid_t child, std::string command, double started_unix)
    : dir_(std::move(dir)), command_(std::move(command)), child_(child), started_unix_(started_unix),
      buckets_(std::size(kBounds), 0) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  ::chmod(dir_.c_str(), 0700);
  path_ = fmt::format("{}/{}.json", dir_, getpid());
  tmp_ = fmt::format("{}/.{}.json.tmp", dir_, getpid());
}

LiveStatusWriter::~LiveStatusWriter() {
  std::error_code ec;
  fs::remove(path_, ec);
  fs::remove(tmp_, ec);
}

void LiveStatusWriter::set_run_id(const std::string& id) {
  std::lock_guard lk(mu_);
  run_id_ = id;
}

void LiveStatusWriter::on_step(const StepRecord& s) {
  std::lock_guard lk(mu_);
  if (main_pid_ == 0) main_pid_ = s.pid;
  if (s.pid != main_pid_) return;
  double dur = s.dur_ns / 1e9, wait = s.data_wait_ns / 1e9;
  ++steps_;
  samples_ += s.samples;
  data_wait_s_ += wait;
  step_sum_s_ += dur;
  for (size_t i = 0; i < std::size(kBounds); ++i)
    if (dur <= kBounds[i]) ++buckets_[i];
  double t = s.t_end_ns / 1e9;
  recent_.push_back({t, dur, wait, s.samples});
  while (!recent_.empty() && recent_.front().t_s < t - kWindowS) recent_.pop_front();
}

std::string LiveStatusWriter::json(double now_unix) const {
  std::lock_guard lk(mu_);
  JsonWriter w(false);
  w.begin_object();
  w.field("schema", "trainscope.live/1");
  w.field("pid", static_cast<int64_t>(getpid()));
  w.field("child_pid", static_cast<int64_t>(child_));
  if (!run_id_.empty()) w.field("run_id", run_id_);
  w.field("command", command_);
  // Whole seconds: the JSON writer keeps 6 significant digits, too few for a Unix time.
  w.field("started_unix", static_cast<int64_t>(started_unix_));
  w.field("updated_unix", static_cast<int64_t>(now_unix));
  w.field("steps_total", steps_);
  if (samples_ > 0) w.field("samples_total", samples_);
  w.field("data_wait_seconds_total", data_wait_s_);
  w.key("step_time_seconds").begin_object();
  w.key("buckets").begin_array();
  for (size_t i = 0; i < std::size(kBounds); ++i) w.begin_array().value(kBounds[i]).value(buckets_[i]).end_array();
  w.begin_array().value("+Inf").value(steps_).end_array();
  w.end_array();
  w.field("sum", step_sum_s_);
  w.field("count", steps_);
  w.end_object();
  if (!recent_.empty()) {
    double dur = 0, wait = 0;
    int64_t samples = 0;
    for (const auto& r : recent_) dur += r.dur_s, wait += r.wait_s, samples += r.samples;
    w.key("window").begin_object();
    w.field("seconds", kWindowS);
    w.field("steps", static_cast<int64_t>(recent_.size()));
    w.field("step_time_mean_s", dur / static_cast<double>(recent_.size()));
    w.field("data_wait_ratio", dur > 0 ? wait / dur : 0.0);
    if (samples > 0 && dur > 0) w.field("samples_per_second", static_cast<double>(samples) / dur);
    w.end_object();
  }
  w.end_object();
  return w.take();
}

void LiveStatusWriter::write(double now_unix) {
  std::string text = json(now_unix);
  std::FILE* f = std::fopen(tmp_.c_str(), "w");
  if (!f) return;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (ok) std::rename(tmp_.c_str(), path_.c_str());
}

}  // namespace ts::run
