#include "experiment/progress.h"

#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>

namespace ts::experiment {

ProgressBar::ProgressBar(std::string title, int configs, bool enabled)
    : title_(std::move(title)), configs_(configs), enabled_(enabled), tty_(isatty(2)) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::start_config(int index, const std::string& label) {
  index_ = index;
  label_ = label;
  done_ = total_ = 0;
  detail_.clear();
  if (!enabled_) return;
  if (tty_) {
    draw();
  } else {
    fmt::print(stderr, "[{} {}/{}] {} ...\n", title_, index_ + 1, configs_, label_);
  }
}

void ProgressBar::update(long done, long total, const std::string& detail) {
  done_ = done;
  total_ = total;
  detail_ = detail;
  if (enabled_ && tty_) draw();
}

void ProgressBar::end_config(const std::string& outcome) {
  if (!enabled_) return;
  if (tty_) {
    fmt::print(stderr, "\r\033[K[{} {}/{}] {}: {}\n", title_, index_ + 1, configs_, label_, outcome);
    drawn_ = false;
  } else {
    fmt::print(stderr, "[{} {}/{}] {}: {}\n", title_, index_ + 1, configs_, label_, outcome);
  }
}

void ProgressBar::finish() {
  if (enabled_ && tty_ && drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

void ProgressBar::draw() {
  constexpr int kWidth = 24;
  std::string bar;
  if (total_ > 0) {
    int fill = int(kWidth * double(done_) / double(total_));
    if (fill > kWidth) fill = kWidth;
    bar = "[" + std::string(size_t(fill), '#') + std::string(size_t(kWidth - fill), '.') + "] " +
          fmt::format("{}/{}", done_, total_);
  } else if (done_ > 0) {
    bar = fmt::format("{} done", done_);
  }
  fmt::print(stderr, "\r\033[K[{} {}/{}] {} {} {}", title_, index_ + 1, configs_, label_, bar, detail_);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ts::experiment
