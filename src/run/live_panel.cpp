#include "run/live_panel.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

#include "util/stats.h"

namespace ts::run {
namespace {

// Columns of UTF-8 text: one per code point (the panel uses no wide characters).
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// `s` cut to `width` columns, never inside a code point; "…" marks the cut.
std::string fit(const std::string& s, size_t width) {
  if (columns(s) <= width) return s;
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((s[i] & 0xC0) != 0x80) {
      if (cols + 1 >= width) break;
      ++cols;
    }
    out += s[i];
  }
  return out + "…";
}

std::string panel_ms(int64_t ns) { return ns < 0 ? "n/a" : fmt::format("{:.1f}", ns / 1e6); }

std::string clock(double s) {
  int t = static_cast<int>(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our terminal is gone: nothing to draw on
    off += static_cast<size_t>(w);
  }
}

}  // namespace

void LivePanelModel::on_step(const StepRecord& s) {
  std::lock_guard lk(mu_);
  if (pid_ == 0) pid_ = s.pid;
  if (s.pid != pid_) return;
  int level = static_cast<int>(step_source(s.flags));
  if (level < level_) return;
  if (level > level_) {  // a better marker: its steps are the loop's (the agent restarts too)
    level_ = level;
    steps_ = 0;
    recent_.clear();
  }
  steps_ = std::max(steps_, s.step);
  recent_.push_back({s.step, s.t_end_ns, s.dur_ns, s.data_wait_ns, s.h2d_ns, s.fwd_ns, s.bwd_ns, s.opt_ns, s.gpu_ns});
  if (recent_.size() > kWindowSteps) recent_.pop_front();
}

void LivePanelModel::on_gpu(const GpuRecord& g) {
  std::lock_guard lk(mu_);
  if (g.pid != pid_) return;
  // The agent reads CUDA events a step or two late: join from the end.
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it)
    if (it->step == g.step) {
      it->gpu_ns = g.gpu_ns;
      return;
    }
}

void LivePanelModel::set_top_finding(std::optional<LiveFinding> f) {
  std::lock_guard lk(mu_);
  finding_ = std::move(f);
}

int64_t LivePanelModel::steps() const {
  std::lock_guard lk(mu_);
  return steps_;
}

std::vector<std::string> LivePanelModel::lines(size_t width, double elapsed_s) const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  if (recent_.empty()) {
    out.push_back(fmt::format("trainscope live · {} · waiting for the first training step", clock(elapsed_s)));
    out.push_back("  (the step's phases appear here once the loop runs)");
    out.push_back("  top finding so far: none yet");
  } else {
    auto med = [&](int64_t Phases::*field, bool optional_value) -> int64_t {
      std::vector<int64_t> v;
      v.reserve(recent_.size());
      for (const auto& p : recent_)
        if (!optional_value || p.*field >= 0) v.push_back(p.*field);
      return v.empty() ? -1 : median_int64(std::move(v));
    };
    std::string rate;
    if (recent_.size() >= 2 && recent_.back().t_end_ns > recent_.front().t_end_ns)
      rate = fmt::format(" · {:.1f} steps/s",
                         (recent_.size() - 1) / ((recent_.back().t_end_ns - recent_.front().t_end_ns) / 1e9));
    out.push_back(fmt::format("trainscope live · {} · step {}{} · median step {} ms (last {} steps)", clock(elapsed_s),
                              steps_, rate, panel_ms(med(&Phases::dur_ns, false)), recent_.size()));
    out.push_back(fmt::format("  median ms: data wait {} · H2D {} · forward {} · backward {} · optimizer {} · GPU {}",
                              panel_ms(med(&Phases::wait_ns, false)), panel_ms(med(&Phases::h2d_ns, false)),
                              panel_ms(med(&Phases::fwd_ns, false)), panel_ms(med(&Phases::bwd_ns, false)),
                              panel_ms(med(&Phases::opt_ns, false)), panel_ms(med(&Phases::gpu_ns, true))));
    if (finding_) {
      std::string gain = finding_->gain_ratio > 0 && finding_->gain_ratio < 1
                             ? fmt::format(" (up to {:.1f}x)", 1 / (1 - finding_->gain_ratio))
                             : "";
      out.push_back(fmt::format("  top finding so far: [{}] {}: {}{}", finding_->severity, finding_->id,
                                finding_->title, gain));
    } else {
      out.push_back("  top finding so far: none");
    }
  }
  for (auto& l : out) l = fit(l, width);
  return out;
}

LivePanel::LivePanel(int fd) : fd_(fd) {
  winsize ws{};
  if (!isatty(fd_) || ioctl(fd_, TIOCGWINSZ, &ws) != 0 || ws.ws_row < 8 || ws.ws_col < 40) return;
  cols_ = ws.ws_col;
  active_ = true;
}

LivePanel::~LivePanel() { close(); }

void LivePanel::erase_locked(std::string& out) {
  if (!drawn_) return;
  // DECSC, down a line (CUD: never scrolls; the panel's rows are there), column 1, erase to the
  // end of the screen, DECRC. The cursor's own line is left as it is.
  out += "\0337\033[B\r\033[J\0338";
  drawn_ = false;
}

void LivePanel::draw_locked(std::string& out) {
  if (lines_.empty()) return;
  const int n = static_cast<int>(lines_.size());
  // Room below the cursor's line: IND n times (scrolls at the bottom, keeps the column), RI back.
  for (int i = 0; i < n; ++i) out += "\033D";
  for (int i = 0; i < n; ++i) out += "\033M";
  out += "\0337";
  for (int i = 0; i < n; ++i) {
    out += "\033D\r\033[2K";
    out += i == 0 ? "\033[7m" + lines_[static_cast<size_t>(i)] + "\033[0m" : lines_[static_cast<size_t>(i)];
  }
  out += "\0338";
  drawn_ = true;
}

void LivePanel::pass_through(const char* p, size_t n) {
  std::lock_guard lk(mu_);
  if (!active_) {
    write_all(fd_, std::string(p, n));
    return;
  }
  // One write for erase + the job's bytes + the panel: the terminal never shows them half done.
  std::string out;
  erase_locked(out);
  out.append(p, n);
  draw_locked(out);
  write_all(fd_, out);
}

bool LivePanel::tick(double now_s) {
  std::lock_guard lk(mu_);
  if (!active_) return false;
  if (started_s_ == 0) started_s_ = now_s;
  if (last_render_s_ >= 0 && now_s - last_render_s_ < 1.0 / kRefreshPerS) return false;
  last_render_s_ = now_s;
  winsize ws{};
  if (ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) cols_ = ws.ws_col;  // follows a resize
  lines_ = model_.lines(static_cast<size_t>(cols_ - 1), now_s - started_s_);
  std::string out;
  erase_locked(out);
  draw_locked(out);
  write_all(fd_, out);
  return true;
}

void LivePanel::close() {
  std::lock_guard lk(mu_);
  if (!active_) return;
  std::string out;
  erase_locked(out);
  write_all(fd_, out);
  active_ = false;
}

}  // namespace ts::run
