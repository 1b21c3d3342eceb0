#pragma once
// trainscope's end of the agent channel: a FIFO in a private temporary directory, read by a
// background thread into Records. We hold a write end open ourselves so the FIFO never reports
// end-of-file while agents come and go; the agents open it O_NONBLOCK, so if we die they get
// EPIPE and carry on without us. The pipe buffer is raised to 1 MiB (about 4,600 step records),
// and the thread reads it in rounds of kRoundMs, so that an agent's write() seldom wakes it.
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "run/agent_records.h"

namespace ts::run {

class AgentChannel {
 public:
  AgentChannel();  // creates the FIFO; throws UserError when it cannot
  ~AgentChannel();
  AgentChannel(const AgentChannel&) = delete;
  AgentChannel& operator=(const AgentChannel&) = delete;

  const std::string& path() const { return path_; }
  // Starts the reader thread; `on_step` / `on_text` / `on_gpu` (optional) run on it for each step /
  // text / GPU-time record.
  void start(std::function<void(const StepRecord&)> on_step = {},
             std::function<void(const TextRecord&)> on_text = {},
             std::function<void(const GpuRecord&)> on_gpu = {});
  // Reads what is left, stops the thread and removes the FIFO.
  void stop();
  // A copy of everything received so far.
  Records snapshot() const;

 private:
  static constexpr int kRoundMs = 10;  // the reader's pause between drains (loop())
  void loop();
  size_t drain();  // bytes read
  std::string dir_, path_;
  size_t pipe_bytes_ = 65536;  // the FIFO's capacity (F_GETPIPE_SZ)
  int rfd_ = -1, wfd_ = -1, wake_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  Records records_;
  RecordDecoder decoder_{records_};
  std::function<void(const StepRecord&)> on_step_;
  std::function<void(const TextRecord&)> on_text_;
  std::function<void(const GpuRecord&)> on_gpu_;
};

}  // namespace ts::run
