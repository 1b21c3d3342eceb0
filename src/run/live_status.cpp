#include "run/live_status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "util/json_writer.h"
#include "util/private_dir.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {
constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
constexpr double kWindowS = 10;
}  // namespace

std::string live_dir_trusted_base(const std::string& dir) {
  // The folders we create (trainscope/live, trainscope-<uid>/live) sit below a base someone else
  // made safe: the user's runtime dir (0700 by the XDG spec) or the sticky /tmp. Any other dir
  // (--live-dir, tests) is trusted from its parent down.
  const char* x = std::getenv("XDG_RUNTIME_DIR");
  if (x && *x && dir.rfind(std::string(x) + "/", 0) == 0) return x;
  if (dir.rfind("/tmp/trainscope-", 0) == 0) return "/tmp";
  return fs::path(dir).lexically_normal().parent_path().string();
}

LiveStatusWriter::LiveStatusWriter(std::string dir, pid_t child, std::string command, double started_unix)
    : dir_(std::move(dir)), command_(std::move(command)), child_(child), started_unix_(started_unix) {
  // Another user who made the folder first could read our files, redirect our writes through a
  // symlink or plant fake jobs for serve: we write only into a 0700 folder of ours (lstat-checked).
  problem_ = make_private_dir(dir_, live_dir_trusted_base(dir_));
  path_ = fmt::format("{}/{}.json", dir_, getpid());
}

LiveStatusWriter::~LiveStatusWriter() {
  std::error_code ec;
  for (const auto& p : written_) {
    fs::remove(p, ec);
    fs::path tmp = fs::path(p).parent_path() / ("." + fs::path(p).filename().string() + ".tmp");
    fs::remove(tmp, ec);
  }
}

void LiveStatusWriter::set_run_id(const std::string& id) {
  std::lock_guard lk(mu_);
  run_id_ = id;
}

void LiveStatusWriter::set_job(const std::string& job, const std::string& node) {
  std::lock_guard lk(mu_);
  job_ = job;
  node_ = node;
}

void LiveStatusWriter::set_top_finding(std::optional<LiveFinding> f) {
  std::lock_guard lk(mu_);
  finding_ = std::move(f);
}

void LiveStatusWriter::on_text(const TextRecord& t) {
  // hello: torchrun's RANK; runtime (after step 1): dist.get_rank(), e.g. mp.spawn jobs.
  if ((t.kind != "hello" && t.kind != "runtime") || t.get("rank").empty()) return;
  Identity id;
  id.rank = static_cast<int>(t.get_int("rank", -1));
  id.world_size = static_cast<int>(t.get_int("world_size", -1));
  id.local_rank = static_cast<int>(t.get_int("local_rank", -1));
  if (id.rank < 0 || id.world_size <= 1) return;
  std::lock_guard lk(mu_);
  auto& known = ranks_[t.pid];
  if (id.local_rank < 0) id.local_rank = known.local_rank;
  known = id;
}

void LiveStatusWriter::on_step(const StepRecord& s) {
  std::lock_guard lk(mu_);
  if (first_pid_ == 0) first_pid_ = s.pid;
  Stream& st = streams_[s.pid];
  if (st.buckets.empty()) st.buckets.assign(std::size(kBounds), 0);
  double dur = s.dur_ns / 1e9, wait = s.data_wait_ns / 1e9;
  ++st.steps;
  st.samples += s.samples;
  st.data_wait_s += wait;
  st.step_sum_s += dur;
  for (size_t i = 0; i < std::size(kBounds); ++i)
    if (dur <= kBounds[i]) ++st.buckets[i];
  double t = s.t_end_ns / 1e9;
  st.recent.push_back({t, dur, wait, s.samples});
  while (!st.recent.empty() && st.recent.front().t_s < t - kWindowS) st.recent.pop_front();
}

std::string LiveStatusWriter::json_locked(pid_t pid, const Stream& st, const Identity* id, double now_unix) const {
  sample::LiveStatus s;
  s.pid = static_cast<int>(getpid());
  // The training process: the rank's own process under torchrun, else the command we started.
  s.child_pid = static_cast<int>(id ? pid : child_);
  s.run_id = run_id_;
  s.job = job_;
  s.node = node_;
  s.command = command_;
  if (id) s.rank = id->rank, s.local_rank = id->local_rank, s.world_size = id->world_size;
  s.started_unix = started_unix_;
  s.updated_unix = now_unix;
  s.steps_total = st.steps;
  if (st.samples > 0) s.samples_total = st.samples;
  s.data_wait_seconds_total = st.data_wait_s;
  for (size_t i = 0; i < std::size(kBounds); ++i)
    s.step_buckets.emplace_back(kBounds[i], i < st.buckets.size() ? static_cast<double>(st.buckets[i]) : 0.0);
  s.step_buckets.emplace_back(INFINITY, static_cast<double>(st.steps));
  s.step_seconds_sum = st.step_sum_s;
  s.step_count = st.steps;
  if (!st.recent.empty()) {
    double dur = 0, wait = 0;
    int64_t samples = 0;
    for (const auto& r : st.recent) dur += r.dur_s, wait += r.wait_s, samples += r.samples;
    s.window_seconds = kWindowS;
    s.window_steps = static_cast<int64_t>(st.recent.size());
    s.step_time_mean_s = dur / static_cast<double>(st.recent.size());
    s.data_wait_ratio = dur > 0 ? wait / dur : 0.0;
    if (samples > 0 && dur > 0) s.samples_per_second = static_cast<double>(samples) / dur;
  }
  if (finding_) {
    s.has_finding = true;
    s.finding_id = finding_->id;
    s.finding_severity = finding_->severity;
    s.finding_title = finding_->title;
    s.finding_gain_ratio = finding_->gain_ratio;
  }
  return sample::live_status_json(s);
}

std::vector<std::pair<std::string, std::string>> LiveStatusWriter::files(double now_unix) const {
  std::lock_guard lk(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  // Ranks: one file each (every ranked process that reports steps).
  for (const auto& [pid, st] : streams_) {
    auto it = ranks_.find(pid);
    if (it == ranks_.end()) continue;
    out.emplace_back(fmt::format("{}/{}-r{}.json", dir_, getpid(), it->second.rank),
                     json_locked(pid, st, &it->second, now_unix));
  }
  if (!out.empty()) return out;
  // One process (or processes with no rank): the first that reported steps, as before.
  Stream empty;
  auto it = streams_.find(first_pid_);
  out.emplace_back(path_, json_locked(first_pid_, it == streams_.end() ? empty : it->second, nullptr, now_unix));
  return out;
}

std::string LiveStatusWriter::json(double now_unix) const {
  std::lock_guard lk(mu_);
  Stream empty;
  auto it = streams_.find(first_pid_);
  return json_locked(first_pid_, it == streams_.end() ? empty : it->second, nullptr, now_unix);
}

void LiveStatusWriter::write(double now_unix) {
  if (!problem_.empty()) return;  // refused once, at start (run_session says why)
  bool ranked = false;
  for (const auto& [path, text] : files(now_unix)) {
    ranked = ranked || path != path_;
    {
      std::lock_guard lk(mu_);
      written_.insert(path);
    }
    write_file_atomically(path, text);  // O_EXCL|O_NOFOLLOW temporary + rename; best effort
  }
  // A single-process file written before the ranks said hello is no longer current.
  if (ranked) {
    std::error_code ec;
    fs::remove(path_, ec);
  }
}

}  // namespace ts::run
