#pragma once
// The agent's records (agent/trainscope_agent/channel.py writes them; docs/AGENT.md documents
// the layout) and the decoder that turns the FIFO's byte stream back into them.
// Every record: 16-byte header {magic u32 'TSA1', length u16, type u8, version u8, pid u32,
// seq u32}, then a fixed little-endian payload (steps, GPU times, fetches) or key=value text.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ts::run {

inline constexpr uint32_t kRecordMagic = 0x31415354;  // "TSA1" little-endian
inline constexpr size_t kRecordHeader = 16;
inline constexpr size_t kMaxRecord = 4096;  // PIPE_BUF: one atomic write

enum class RecordType : uint8_t { Text = 1, Step = 2, Gpu = 3, Fetch = 4 };

// Step flags (channel.py F_*). What ended the step: optimizer 1, backward 16, forward 32, none of
// them a DataLoader fetch. Workers 64: a fetch in it waited for DataLoader workers to start.
inline constexpr int64_t kStepOptimizer = 1, kStepProfiled = 2, kStepNonFinite = 4, kStepLoss = 8,
                         kStepBackward = 16, kStepForward = 32, kStepWorkers = 64;

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
  int64_t heap = -1;    // the C heap's in-use bytes (glibc's mallinfo2, agent heap.py); -1 none
  int64_t heap_free = -1;  // the bytes the C heap holds free, still resident (mallinfo2 fordblks); -1 none
  int64_t cpu_ns = -1;  // the process's CPU clock at this step's end (read with the RSS); -1 not read
  bool rss_read = true;  // false: the RSS is the last reading carried over (cpu_ns -1 in a record that has it)
  int64_t gpu_ns = -1;  // joined from the GPU record of the same step, when it arrived
};

struct GpuRecord {
  pid_t pid = 0;
  int64_t step = 0, gpu_ns = 0;
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

// Long runs: what we keep must not grow with run length x ranks (a week-long job sends hundreds of
// millions of records, and the whole set is copied and summarised every few seconds). Per process
// and kind of step (its marker, step_source()), every step goes into running totals, and the steps
// themselves are kept as a sample: the first kStepsHead in full (warm-up, the profiler window of a
// default run), then every stride-th one, the stride doubling whenever more than kStepsSample
// are kept, so the sample spans the whole run evenly and medians and the memory trend read the
// same from it. Steps in the profiler window are always kept. GPU times are joined into the
// sampled step on arrival; fetch records only add to totals.
inline constexpr int64_t kStepsHead = 200;
inline constexpr int64_t kStepsSample = 2048;
inline constexpr size_t kMaxTexts = 10000;    // text records kept (hello, notes, errors); the rest counted
inline constexpr size_t kMaxPendingGpu = 256;  // GPU times whose step record has not arrived yet

struct StepTotals {  // every step of one process and kind, never sampled
  int64_t count = 0, dur_ns = 0, data_wait_ns = 0, io_ns = 0, h2d_ns = 0, nonfinite = 0;
  int64_t samples = 0, getitem_ns = 0, collate_ns = 0, fetches = 0;  // over steps with samples > 0
  int64_t mem_peak = -1, mem_reserved = -1, rss = -1, last_step = -1;  // maxima
  int64_t last_end_ns = 0;  // the latest step's end (t_end_ns, monotonic): where the loop ended
                            // when the job died before its exit records
  // The sample's state: steps past the head seen, and the stride they are kept at.
  int64_t tail_seen = 0, tail_kept = 0, stride = 1;
};

// DataLoader workers' fetch records (worker id, samples, getitem and collate ns), summed. Each worker
// process's first batch is summed apart: it carries what the dataset does once per worker (opening
// a file or a database, reading a manifest on its first item), which is not a sample's cost.
struct FetchSums {
  int64_t records = 0, samples = 0, getitem_ns = 0, collate_ns = 0;
  FetchSums& operator+=(const FetchSums& o) {
    records += o.records, samples += o.samples, getitem_ns += o.getitem_ns, collate_ns += o.collate_ns;
    return *this;
  }
};
struct FetchTotals {
  FetchSums first, later;   // each worker process's first batch; the batches after it
  std::set<pid_t> workers;  // the worker processes seen
};

// A CUDA allocator reading carried by a step record. The agent reads the allocator at most
// every 50 ms (agent/trainscope_agent/step_path.py), not at every step, so the readings are kept
// apart from the step sample (which would miss most of them): all of them, thinned to every
// other one whenever more than kMemPoints are held.
// The host's readings likewise (Records::host_mem): the RSS, read at most every 10 ms (a step
// between readings carries the last one again; a reading is marked by the CPU clock read with it),
// and the C heap's in-use and free bytes where glibc tells (sent only by the step that read them).
// Repeated values would flatten a memory trend: under load a heap read once in 25 steps made a
// 24 MiB-a-step leak read 14.4 MiB a step.
struct MemPoint {
  pid_t pid = 0;
  int level = 0;  // the step's StepSource
  int64_t step = 0, allocated = -1, reserved = -1, peak = -1;
  int64_t rss = -1, heap = -1, heap_free = -1;  // host readings (-1: not read)
  bool profiled = false;
};
inline constexpr size_t kMemPoints = 4096;

struct Records {
  std::vector<StepRecord> steps;  // the bounded sample described above, in arrival order
  std::vector<MemPoint> mem;      // every CUDA allocator reading (bounded, see MemPoint)
  std::vector<MemPoint> host_mem; // every RSS reading, with the C heap's where read (bounded likewise)
  std::map<std::pair<pid_t, int>, StepTotals> step_totals;  // (pid, StepSource level) -> totals
  std::vector<GpuRecord> gpu;     // GPU times not joined yet (bounded)
  FetchTotals fetches;
  std::vector<TextRecord> texts;
  uint64_t texts_dropped = 0;
  uint64_t bytes = 0;
  uint64_t bad_bytes = 0;  // skipped while resynchronising on a damaged stream
  std::map<pid_t, uint32_t> last_seq;
  uint64_t seq_gaps = 0;   // records the agent dropped (its side of the FIFO was full)
};

// The totals of `pid`'s steps of the kind steps_of() picks (its best marker, step_source());
// a zero StepTotals when it has none.
const StepTotals& totals_of(const Records& r, pid_t pid);

// Incremental decoder: feed() any chunking of the byte stream; complete records are added to
// Records (steps sampled, see above). `fresh` (optional) receives every step and text record
// decoded by this call, sampled or not, in order (the live views count every step); `fresh_gpu`
// every GPU time (the live panel joins them to its own recent steps).
class RecordDecoder {
 public:
  explicit RecordDecoder(Records& out) : out_(out) {}
  void feed(std::string_view bytes, std::vector<StepRecord>* fresh_steps = nullptr,
            std::vector<TextRecord>* fresh_texts = nullptr, std::vector<GpuRecord>* fresh_gpu = nullptr);
  size_t pending() const { return buf_.size(); }

 private:
  void decode_one(std::string_view rec);
  void add_step(const StepRecord& s);
  void add_gpu(const GpuRecord& g);
  static void add_mem(std::vector<MemPoint>& to, MemPoint p);  // thinned past kMemPoints
  std::vector<StepRecord>* fresh_steps_ = nullptr;
  std::vector<TextRecord>* fresh_texts_ = nullptr;
  std::vector<GpuRecord>* fresh_gpu_ = nullptr;
  Records& out_;
  std::string buf_;
};

TextRecord parse_text(std::string_view payload);

}  // namespace ts::run
