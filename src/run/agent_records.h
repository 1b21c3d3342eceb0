#pragma once
// The agent's records (agent/trainscope_agent/channel.py writes them; docs/AGENT.md documents
// the layout) and the decoder that turns the FIFO's byte stream back into them.
// Every record: 16-byte header {magic u32 'TSA1', length u16, type u8, version u8, pid u32,
// seq u32}, then a fixed little-endian payload (steps, GPU times, fetches) or key=value text.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ts::run {

inline constexpr uint32_t kRecordMagic = 0x31415354;  // "TSA1" little-endian
inline constexpr size_t kRecordHeader = 16;
inline constexpr size_t kMaxRecord = 4096;  // PIPE_BUF: one atomic write

enum class RecordType : uint8_t { Text = 1, Step = 2, Gpu = 3, Fetch = 4 };

// Step flags (channel.py F_*). What ended the step: optimizer 1, backward 16, forward 32, none of
// them a DataLoader fetch.
inline constexpr int64_t kStepOptimizer = 1, kStepProfiled = 2, kStepNonFinite = 4, kStepLoss = 8,
                         kStepBackward = 16, kStepForward = 32;

// The step markers, weakest first (agent/trainscope_agent/state.py): a process's steps are those
// of the best marker it reported.
enum class StepSource { Forward = 1, Fetch = 2, Backward = 3, Optimizer = 4 };
StepSource step_source(int64_t flags);
const char* step_source_name(StepSource s);  // forward | dataloader | backward | optimizer

struct StepRecord {
  pid_t pid = 0;
  int64_t step = 0, flags = 0, t_end_ns = 0, dur_ns = 0, data_wait_ns = 0, fetches = 0;
  int64_t h2d_ns = 0, h2d_count = 0, h2d_bytes = 0, h2d_pageable = 0, h2d_blocking = 0;
  int64_t fwd_ns = 0, bwd_ns = 0, opt_ns = 0, io_ns = 0, io_count = 0, item_count = 0, item_ns = 0;
  int64_t mem_allocated = -1, mem_reserved = -1, mem_peak = -1, rss = -1;
  int64_t samples = 0, getitem_ns = 0, collate_ns = 0;
  double loss = 0;
  int64_t comm_ns = 0, comm_count = 0;  // explicit torch.distributed collectives (newer agents)
  // backward() calls outside optimizer.step(), optimizer.step() calls; -1 from older agents
  int64_t bwd_count = -1, opt_count = -1;
  int64_t gpu_ns = -1;  // joined from the GPU record of the same step, when it arrived
};

struct GpuRecord {
  pid_t pid = 0;
  int64_t step = 0, gpu_ns = 0;
};

struct FetchRecord {
  pid_t pid = 0;
  int32_t worker_id = -1;
  int64_t samples = 0, getitem_ns = 0, collate_ns = 0;
};

// key=value lines; `kind` is the first line's value (hello, torch, loader, optimizer, model,
// runtime, trace, note, error, end).
struct TextRecord {
  pid_t pid = 0;
  std::string kind;
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& dflt = "") const;
  int64_t get_int(const std::string& k, int64_t dflt = -1) const;
  double get_double(const std::string& k, double dflt = -1) const;
  bool get_bool(const std::string& k) const { return get_int(k, 0) != 0; }
};

struct Records {
  std::vector<StepRecord> steps;
  std::vector<GpuRecord> gpu;
  std::vector<FetchRecord> fetches;
  std::vector<TextRecord> texts;
  uint64_t bytes = 0;
  uint64_t bad_bytes = 0;  // skipped while resynchronising on a damaged stream
  std::map<pid_t, uint32_t> last_seq;
  uint64_t seq_gaps = 0;   // records the agent dropped (its side of the FIFO was full)
};

// Incremental decoder: feed() any chunking of the byte stream; complete records are appended.
class RecordDecoder {
 public:
  explicit RecordDecoder(Records& out) : out_(out) {}
  void feed(std::string_view bytes);
  size_t pending() const { return buf_.size(); }

 private:
  void decode_one(std::string_view rec);
  Records& out_;
  std::string buf_;
};

TextRecord parse_text(std::string_view payload);

}  // namespace ts::run
