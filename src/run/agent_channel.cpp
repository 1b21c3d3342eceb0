#include "run/agent_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace ts::run {

AgentChannel::AgentChannel() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/trainscope-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw UserError(tmpl + ": cannot create a temporary directory: " + std::strerror(errno));
  dir_ = tmpl;
  path_ = dir_ + "/agent.fifo";
  if (mkfifo(path_.c_str(), 0600) != 0)
    throw UserError(path_ + ": cannot create the agent FIFO: " + std::strerror(errno));
  rfd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  wfd_ = rfd_ >= 0 ? open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1;
  if (rfd_ < 0 || wfd_ < 0 || pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw UserError(path_ + ": cannot open the agent FIFO: " + std::strerror(errno));
  fcntl(rfd_, F_SETPIPE_SZ, 1 << 20);  // best effort: the default 64 KiB also works
  int cap = fcntl(rfd_, F_GETPIPE_SZ);
  pipe_bytes_ = cap > 0 ? static_cast<size_t>(cap) : 65536;
}

AgentChannel::~AgentChannel() {
  stop();
  for (int fd : {rfd_, wfd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void AgentChannel::start(std::function<void(const StepRecord&)> on_step,
                         std::function<void(const TextRecord&)> on_text,
                         std::function<void(const GpuRecord&)> on_gpu) {
  on_step_ = std::move(on_step);
  on_text_ = std::move(on_text);
  on_gpu_ = std::move(on_gpu);
  thread_ = std::thread([this] { loop(); });
}

size_t AgentChannel::drain() {
  char buf[65536];
  size_t total = 0;
  for (;;) {
    ssize_t n = read(rfd_, buf, sizeof buf);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
    std::vector<StepRecord> new_steps;  // every step decoded now (Records keeps only a sample)
    std::vector<TextRecord> new_texts;
    std::vector<GpuRecord> new_gpu;
    {
      std::lock_guard lk(mu_);
      decoder_.feed(std::string_view(buf, static_cast<size_t>(n)), on_step_ ? &new_steps : nullptr,
                    on_text_ ? &new_texts : nullptr, on_gpu_ ? &new_gpu : nullptr);
    }
    for (const auto& t : new_texts) on_text_(t);  // before the steps: a hello names its pid's rank
    for (const auto& s : new_steps) on_step_(s);
    for (const auto& g : new_gpu) on_gpu_(g);
  }
  return total;
}

// Reads in rounds: after a drain the thread pauses for a round (stop() ends the pause), so an
// agent's write() finds no reader waiting on the FIFO and wakes no thread. A reader woken by every
// batch cost the writing process about 50 us per write() on a 2-core VM (61 against 13 us with a
// reader that polls: the wake-up of a thread on the other core), about 4 us per step of a fast loop
// (docs/BENCHMARKS.md, "Session 41"). Records wait at most a round; a pipe filling faster than that
// (a quarter of it in one round: many ranks, a 64 KiB pipe) is read again at once.
void AgentChannel::loop() {
  pollfd fds[2] = {{rfd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  while (!stop_) {
    int r = poll(fds, 2, 200);
    if (r < 0 && errno != EINTR) break;
    if (drain() < pipe_bytes_ / 4 && !stop_) poll(&fds[1], 1, kRoundMs);
  }
  drain();
}

void AgentChannel::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  char c = 1;
  (void)!write(wake_[1], &c, 1);
  thread_.join();
  std::error_code ec;
  std::filesystem::remove(path_, ec);  // late agents now fail to open it and stay quiet
}

Records AgentChannel::snapshot() const {
  std::lock_guard lk(mu_);
  return records_;
}

}  // namespace ts::run
