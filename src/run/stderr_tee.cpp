#include "run/stderr_tee.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/error.h"

namespace ts::run {
namespace {

constexpr size_t kTailBytes = 16384;  // enough for a long traceback's last lines

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // our stderr is gone: keep the tail anyway
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

StderrTee::StderrTee(bool drop_kineto_markers) {
  if (drop_kineto_markers) markers_.emplace();
  if (isatty(STDERR_FILENO)) {
    winsize ws{};
    bool have_ws = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0;
    int m = -1, s = -1;
    if (openpty(&m, &s, nullptr, nullptr, have_ws ? &ws : nullptr) == 0) {
      termios t{};
      if (tcgetattr(s, &t) == 0) {
        t.c_oflag &= ~static_cast<tcflag_t>(OPOST);  // bytes pass unchanged; our terminal maps \n itself
        tcsetattr(s, TCSANOW, &t);
      }
      fcntl(m, F_SETFD, FD_CLOEXEC);
      fcntl(s, F_SETFD, FD_CLOEXEC);
      read_fd_ = m;
      write_fd_ = s;
      pty_ = true;
    }
  }
  if (read_fd_ < 0) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw UserError(std::string("run: stderr pipe: ") + std::strerror(errno));
    read_fd_ = p[0];
    write_fd_ = p[1];
  }
  if (pipe2(wake_, O_CLOEXEC) != 0) throw UserError(std::string("run: pipe: ") + std::strerror(errno));
}

StderrTee::~StderrTee() {
  if (thread_.joinable()) finish(0, 0);
  for (int fd : {read_fd_, write_fd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
}

void StderrTee::parent_after_fork() {
  close(write_fd_);
  write_fd_ = -1;
  thread_ = std::thread([this] { copy_loop(); });
}

void StderrTee::copy_loop() {
  char buf[8192];
  for (;;) {
    pollfd p[2] = {{read_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int r = poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(read_fd_, buf, sizeof buf);
      if (n > 0) {
        std::string scratch;
        std::string_view out = passed(buf, static_cast<size_t>(n), scratch);
        emit(out.data(), out.size());
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      eof_ = true;  // 0 (pipe) or EIO (pty): every writer closed it
      return;
    }
    if (p[1].revents) return;  // finish(): stop copying here
  }
}

std::string_view StderrTee::passed(const char* p, size_t n, std::string& scratch) {
  if (!markers_) return {p, n};
  markers_->feed(p, n, scratch);
  return scratch;
}

void StderrTee::emit(const char* p, size_t n) {
  if (n == 0) return;
  if (sink_) sink_(p, n);
  else write_all(STDERR_FILENO, p, n);
  tail_.append(p, n);
  if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
}

std::vector<std::string> StderrTee::finish(int quiet_ms, size_t max_lines) {
  if (!thread_.joinable()) return last_lines(tail_, max_lines);
  // The job has exited; give its last bytes (and a dying worker's) a moment to arrive.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(quiet_ms);
  while (!eof_ && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!eof_) (void)!write(wake_[1], "x", 1);
  thread_.join();
  if (markers_) {  // a line held back as a possible marker passes now
    std::string out;
    markers_->flush(out);
    emit(out.data(), out.size());
  }
  if (!eof_) {
    // Something the job started still holds its stderr: a forked copier keeps forwarding it,
    // so that process never writes into a closed pipe because we are gone.
    pid_t pid = fork();
    if (pid == 0) {
      signal(SIGINT, SIG_IGN);
      char buf[8192];
      for (;;) {
        ssize_t n = read(read_fd_, buf, sizeof buf);
        if (n > 0) {
          std::string scratch;
          std::string_view out = passed(buf, static_cast<size_t>(n), scratch);
          write_all(STDERR_FILENO, out.data(), out.size());
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        _exit(0);
      }
    }
  }
  return last_lines(tail_, max_lines);
}

std::vector<std::string> last_lines(const std::string& bytes, size_t max_lines) {
  // Resolve each line: drop ANSI CSI/OSC escapes; a '\r' not followed by '\n' restarts the line
  // (a progress bar redrawing itself), so only what a terminal would finally show is kept.
  std::vector<std::string> lines;
  std::string cur;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (c == '\033') {
      if (i + 1 < bytes.size() && bytes[i + 1] == '[') {
        i += 2;
        while (i < bytes.size() && !(bytes[i] >= '@' && bytes[i] <= '~')) ++i;
      } else if (i + 1 < bytes.size() && bytes[i + 1] == ']') {
        i += 2;
        while (i < bytes.size() && bytes[i] != '\a' && !(bytes[i] == '\033' && i + 1 < bytes.size() && bytes[i + 1] == '\\'))
          ++i;
        if (i < bytes.size() && bytes[i] == '\033') ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (c == '\r') {
      if (i + 1 < bytes.size() && bytes[i + 1] == '\n') continue;
      cur.clear();
      continue;
    }
    if (c == '\n') {
      lines.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  std::vector<std::string> out;
  for (auto it = lines.rbegin(); it != lines.rend() && out.size() < max_lines; ++it) {
    auto b = it->find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    out.push_back(*it);
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace ts::run
