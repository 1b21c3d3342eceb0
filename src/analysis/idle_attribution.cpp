// Idle attribution (docs/ANALYSES.md "GPU idle by cause"): every ns the GPU idles inside the
// analysis window is charged to exactly one cause, from what the host thread that launches the
// GPU work was doing at that moment.
//
// Idle gaps: the gaps between the union of all GPU events (kernel, memcpy, memset; every device
// and stream) that start in the window, as in gpu_time.cpp, so the gaps sum to gpu.idle_ns.
//
// Host timeline: per host thread (pid, tid), its cpu_op, user_annotation, python_function and
// runtime/driver events, nested by time (a child sticking out of its parent is cut at the
// parent's end); at every instant the *deepest* open event, with its chain of ancestors.
//
// Each gap [a, b) is decided by the GPU event(s) that end it and their launching runtime call R
// (correlation id; of several events starting at b, the launch that began last):
//   R began after a      the GPU waited for the host: [a, R.end) is split by the launching
//                        thread's deepest event at each instant (below), [R.end, b) is the
//                        launch's own latency (cause of R's node, normally launch);
//   R began before a, still running at a   the GPU waited for this launch call: split likewise;
//   R ended before a     work was queued but started late: collective (an NCCL kernel waiting
//                        for its peers), stream_wait (a "Stream Wait Event" on its stream between
//                        R's end and b), gpu_overhead (gap < kQueuedOverheadNs), untraced (its
//                        own stream's last event ended at a: an in-order stream starts queued
//                        work at once, and no other stream ran that it could wait for, so the GPU
//                        ran work the trace lacks -- a sampled or filtered trace), else
//                        unattributed ("queued before the gap ...");
//   no R (no correlation id, or launched before the trace began)   split by the thread that
//                        launched most GPU work; with none, unattributed ("no launching thread").
// The cause of a host instant, from its deepest event and ancestors, first match wins:
//   setup        an ancestor cpu_op is the slow first call of its (name, Input Dims) on its
//                thread (>= kSetupMinNs and >= kSetupRatio x the mean of its later calls: cuDNN
//                algorithm search, lazy loading in the first convolution), a compile frame
//                (torch/_dynamo, torch/_inductor, triton compiler), a module-loading runtime
//                call (cuModuleLoad*, cuLibraryLoad*, cuModuleGetFunction), or a launch call
//                itself longer than kLazyLaunchNs (lazy kernel loading);
//   sync         a blocking call: cuda/hip Stream/Device/Event Synchronize, a synchronous
//                cudaMemcpy*, an async copy whose GPU copy is pageable (staged: blocks the
//                host), or inside aten::item / _local_scalar_dense / is_nonzero / nonzero / equal;
//   data_loading inside enumerate(DataLoader)#*.__next__;
//   optimizer    inside Optimizer.step# / Optimizer.zero_grad#;
//   collective   inside nccl:* / gloo:* host calls;
//   memory       cudaMalloc*/cudaFree*/cudaHostAlloc/cudaMallocHost/cudaHostRegister (and cu/hip);
//   launch       any other runtime/driver call (launches, event records);
//   host_compute any other cpu_op / user annotation / Python function;
//   unattributed no event open on the thread ("nothing recorded on the launching thread").
// Two rules look at the whole gap: a drain -- a blocking call (sync) was open on the launching
// thread when the GPU ran dry (at a, or ending within kSyncReturnSlackNs before a) -- charges
// the gap's generic time (launch, host_compute, nothing recorded) to that call, since it
// emptied the queue; and in a gap shorter than kLaunchGapNs generic time is launch overhead.
// Buckets: (cause, deepest event, op, annotation, frame). op = the outermost aten:: op in the
// chain (what the user called), else the innermost cpu_op; annotation = innermost user
// annotation (not ProfilerStep#) or "nn.Module: X" frame; frame = innermost Python frame outside
// torch (else the innermost one). Buckets beyond kMaxEntries (other than each cause's largest)
// fold into one per cause.
#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis/passes.h"

namespace ts::analysis {

const char* idle_cause_name(IdleCause c) {
  static const char* names[kIdleCauses] = {"sync",        "launch",       "data_loading", "optimizer",
                                           "memory",      "setup",        "host_compute", "stream_wait",
                                           "collective",  "gpu_overhead", "untraced",     "unattributed"};
  return names[static_cast<int>(c)];
}

namespace {

using trace::Category;

// Shorter gaps are launch overhead whatever the host ran (HTA calls gaps under 30 µs kernel
// wait; a launch costs 5-20 µs of host time, so 50 µs is a few launches' worth).
constexpr int64_t kLaunchGapNs = 50'000;
// A first call at least 1 ms long and 10x its later calls is one-time work, not the op itself.
constexpr int64_t kSetupMinNs = 1'000'000;
constexpr double kSetupRatio = 10.0;
// Work queued before a gap this short started late by the GPU's own switch between kernels
// (HTA's kernel-wait threshold).
constexpr int64_t kQueuedOverheadNs = 30'000;
// A launch call over 1 ms is loading the kernel's module (CUDA lazy loading), not launching.
constexpr int64_t kLazyLaunchNs = 1'000'000;
// CPU and GPU clocks differ by a few µs in Kineto traces: a sync ending this shortly before the
// GPU went idle still drained it.
constexpr int64_t kSyncReturnSlackNs = 20'000;
constexpr size_t kMaxEntries = 40;

// Texts that stand for the host event where there is none.
enum Reason : uint32_t { kNothingRecorded, kNoLauncher, kQueuedLate, kGpuSwitch, kBetweenOps, kUntracedWork, kReasons };
const char* kReasonText[kReasons] = {
    "nothing recorded on the launching thread",
    "no launching thread known (no correlation ids, no runtime calls)",
    "queued before the gap, yet the GPU idled: a dependency or GPU work the trace lacks (sampled or filtered trace)",
    "work queued ahead; the GPU's own switch between kernels",
    "Python between ops (inside the step, no op recorded)",
    "queued behind its stream's last event, which ended as the gap began: GPU work the trace lacks (sampled or filtered trace)",
};

// Runtime-call classes, by name.
enum RtClass : uint8_t { kRtUnknown, kRtOther, kRtSync, kRtCopyAsync, kRtMemory, kRtModule, kRtLaunch };
RtClass classify_runtime(std::string_view n) {
  // The same blocking calls as the index's flags (trace_index.h): one definition.
  if (is_blocking_sync_call(n) || is_blocking_memcpy_call(n)) return kRtSync;
  if (is_memcpy_call(n)) return kRtCopyAsync;
  if (n.starts_with("cudaMalloc") || n.starts_with("cudaFree") || n.starts_with("cudaHostAlloc") ||
      n.starts_with("cudaHostRegister") || n.starts_with("cudaHostUnregister") ||
      n.starts_with("cuMemAlloc") || n.starts_with("cuMemFree") || n.starts_with("hipMalloc") ||
      n.starts_with("hipFree") || n.starts_with("hipHostMalloc") || n.starts_with("hipHostFree"))
    return kRtMemory;
  if (n.starts_with("cuModuleLoad") || n.starts_with("cuLibraryLoad") || n == "cuModuleGetFunction" ||
      n.starts_with("hipModuleLoad"))
    return kRtModule;
  if (n.find("Launch") != std::string_view::npos) return kRtLaunch;
  return kRtOther;
}

bool is_sync_op(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense" || n == "aten::is_nonzero" ||
         n == "aten::nonzero" || n == "aten::equal";
}
bool is_compile_frame(std::string_view n) {
  return n.find("torch/_dynamo/") != std::string_view::npos ||
         n.find("torch/_inductor/") != std::string_view::npos ||
         n.find("triton/compiler/") != std::string_view::npos;
}

// One open event on a thread's stack with what it inherits from its ancestors.
// The deepest open event at an instant with what it inherits from its ancestors (computed on
// demand from the timeline's chain of parents).
struct Node {
  uint32_t row = kNoRow;
  uint32_t op = kNoRow, outer_aten = kNoRow, annotation = kNoRow, frame = kNoRow, any_frame = kNoRow;
  uint32_t sync_row = kNoRow;  // the blocking event that makes it sync (itself or an ancestor)
  bool setup : 1 = false, sync : 1 = false, data : 1 = false, optimizer : 1 = false, comm : 1 = false;
  IdleCause cause = IdleCause::Unattributed;
};
// What one event itself contributes to the Node of any event inside it.
enum OwnFlag : uint16_t {
  kOwnOp = 1 << 0,         // a cpu_op (not ProfilerStep#): the innermost one is the node's op
  kOwnAten = 1 << 1,       // an aten:: cpu_op: the outermost one is the node's outer_aten
  kOwnAnnotation = 1 << 2, // user annotation (not ProfilerStep#) or nn.Module frame: innermost
  kOwnFrame = 1 << 3,      // a Python frame outside torch: innermost
  kOwnAnyFrame = 1 << 4,   // any other Python frame: innermost
  kOwnSetup = 1 << 5,
  kOwnSync = 1 << 6,       // a blocking call: the outermost one is the node's sync_row
  kOwnData = 1 << 7,
  kOwnOptimizer = 1 << 8,
  kOwnComm = 1 << 9,
};
// A host thread's events nested by time: each one's parent (the deepest event open when it
// started) and its end clamped to the parent's. The deepest open event at t is then the last
// event started by t, or its nearest ancestor still open. 18 bytes per event, where a node and
// segments per event took 64: a large trace's launching thread has tens of millions.
struct Timeline {
  std::vector<uint32_t> rows;    // parents first: by start, then longer first
  std::vector<int32_t> parent;   // index into rows, -1 at the top
  std::vector<int64_t> end;      // clamped to the parent's end
  std::vector<uint16_t> own;     // OwnFlag
  // first_after's last answer: gaps come in time order, so the next search starts near it.
  mutable size_t hint = 0;
};

class Attributor {
 public:
  Attributor(const TraceIndex& idx, const StepSummary& steps, IdleAttribution& out)
      : idx_(idx), s_(idx.s), steps_(steps), out_(out), rt_class_(s_.strings.size(), kRtUnknown),
        traits_(s_.strings.size(), 0), timelines_(s_.threads.size()) {}

  void run();

 private:
  // A host thread or GPU stream: its index in the store's threads (one per (pid, tid)), so
  // per-thread tables are vectors, not hash maps of pairs.
  using ThreadKey = uint32_t;
  ThreadKey thread_of(uint32_t row) const { return s_.thread[row]; }
  struct EntryKey {
    IdleCause cause;
    uint32_t host, op, annotation, frame;
    bool operator==(const EntryKey&) const = default;
  };
  struct EntryKeyHash {
    size_t operator()(const EntryKey& k) const {
      size_t h = static_cast<size_t>(k.cause);
      for (uint32_t v : {k.host, k.op, k.annotation, k.frame}) h = h * 1'000'003 ^ v;
      return h;
    }
  };

  // What an event's name says of it, looked up once per name (not per event) while the
  // timelines are built: their string tests ran on every host event of a launching thread.
  enum Trait : uint8_t {
    kAtenName = 1 << 0,      // aten::*
    kSyncOpName = 1 << 1,    // is_sync_op
    kOptimizerName = 1 << 2, // Optimizer.step# / Optimizer.zero_grad#
    kModuleName = 1 << 3,    // nn.Module: *
    kUserFrame = 1 << 4,     // a Python frame outside torch (and not a built-in)
    kCompileName = 1 << 5,   // is_compile_frame
    kTraitsKnown = 1 << 7,
  };
  uint8_t traits(uint32_t name_id) {
    const uint8_t t = traits_[name_id];
    return (t & kTraitsKnown) ? t : learn_traits(name_id);
  }
  [[gnu::noinline]] uint8_t learn_traits(uint32_t name_id) {
    const std::string_view n = s_.strings.view(name_id);
    uint8_t& t = traits_[name_id];
    t = kTraitsKnown;
    if (n.starts_with("aten::")) t |= kAtenName;
    if (is_sync_op(n)) t |= kSyncOpName;
    if (n.starts_with("Optimizer.step#") || n.starts_with("Optimizer.zero_grad#")) t |= kOptimizerName;
    if (n.starts_with("nn.Module: ")) t |= kModuleName;
    if (n.find("torch/") == std::string_view::npos && !n.starts_with("<built-in")) t |= kUserFrame;
    if (is_compile_frame(n)) t |= kCompileName;
    return t;
  }
  RtClass rt_class(uint32_t row) {
    const RtClass c = rt_class_[s_.name[row]];
    return c != kRtUnknown ? c : learn_rt_class(row);
  }
  [[gnu::noinline]] RtClass learn_rt_class(uint32_t row) {
    return rt_class_[s_.name[row]] = classify_runtime(s_.name_of(row));
  }
  const Timeline& timeline(ThreadKey t);
  Timeline build(ThreadKey t);
  void bucket_threads();
  void classify(Node& n);
  uint32_t entry_for_node(const Node* n);
  uint32_t entry_for(IdleCause c, uint32_t host, uint32_t op, uint32_t ann, uint32_t frame);
  uint32_t reason_entry(Reason r) { return entry_for(IdleCause::Unattributed, kNoRow - 1 - r, kNoRow, kNoRow, kNoRow); }
  void emit(int64_t begin, int64_t end, uint32_t entry);
  // Splits [x, y) by thread t's deepest event; where t has nothing open, by the other launching
  // threads' (most launches first). Generic time goes to `generic` when set.
  void sweep(ThreadKey t, int64_t x, int64_t y, uint32_t generic);
  void sweep_from(ThreadKey t, size_t next_thread, int64_t x, int64_t y, uint32_t generic);
  // Index of the deepest event open at t, given `next`, the first event starting after t.
  int32_t deepest_at(const Timeline& tl, int64_t t, size_t next) const;
  size_t first_after(const Timeline& tl, int64_t t) const;
  Node node_of(const Timeline& tl, int32_t i);
  std::optional<Node> node_at(const Timeline& tl, int64_t t);
  void fold_small_entries();

  const TraceIndex& idx_;
  const trace::EventStore& s_;
  const StepSummary& steps_;
  IdleAttribution& out_;
  std::vector<RtClass> rt_class_;
  std::vector<uint8_t> traits_;  // Trait, by string id
  std::vector<std::unique_ptr<Timeline>> timelines_;  // by thread, built on first use
  std::unordered_map<EntryKey, uint32_t, EntryKeyHash> entry_index_;
  std::vector<int64_t> entry_last_gap_;
  std::vector<uint8_t> pageable_launch_;  // by row: runtime call whose GPU copy is pageable
  std::vector<ThreadKey> launching_;      // threads that launch GPU work, most launches first
  bool bucketed_ = false;
  std::vector<std::vector<uint32_t>> buckets_;  // by launching_ index: its host events in start order
  // Names of some cpu_op lasting kSetupMinNs or more (on any launching thread): only their first
  // calls can be slow first calls, so only they are counted.
  std::vector<uint8_t> long_name_;
  ThreadKey first_thread_{};              // the thread the current sweep started on
  int64_t gap_no_ = 0;
};

// Every launching thread's host events (cpu_op/annotation, python, runtime; lasting, overlapping
// the window) in start order, in one pass: the three start-sorted lists are walked together, so
// each thread's rows come out merged. Scanning the lists once per thread would cost threads x
// events; bucketing them per list and merging after held each row twice more.
void Attributor::bucket_threads() {
  bucketed_ = true;
  std::vector<int32_t> slot(s_.threads.size(), -1);
  for (uint32_t i = 0; i < launching_.size(); ++i) slot[launching_[i]] = static_cast<int32_t>(i);
  buckets_.assign(launching_.size(), {});
  long_name_.assign(s_.strings.size(), 0);
  const std::vector<uint32_t>* lists[3] = {&idx_.host_ops, &idx_.python, &idx_.runtime};
  size_t pos[3] = {0, 0, 0};
  int64_t head[3];  // start of each list's next row, INT64_MAX once it is used up
  auto load = [&](int l) {
    head[l] = pos[l] < lists[l]->size() ? s_.ts_ns[(*lists[l])[pos[l]]] : INT64_MAX;
  };
  for (int l = 0; l < 3; ++l) load(l);
  ThreadKey last = UINT32_MAX;
  int64_t last_slot = -1;
  for (;;) {
    const int l = head[0] <= head[1] ? (head[0] <= head[2] ? 0 : 2) : (head[1] <= head[2] ? 1 : 2);
    if (head[l] == INT64_MAX) break;
    const uint32_t r = (*lists[l])[pos[l]++];
    load(l);
    if (s_.dur_ns[r] <= 0 || s_.end_ns(r) <= idx_.window_begin || s_.ts_ns[r] >= idx_.window_end) continue;
    // A thread's rows come in runs: its slot is looked up on a change only (a lookup per row,
    // whose load the bucket's address waits on, made the whole pass 78-83 ms instead of 63-68).
    const ThreadKey k = thread_of(r);
    if (k != last) {
      last = k;
      last_slot = slot[k];
    }
    if (last_slot < 0) continue;
    buckets_[last_slot].push_back(r);
    if (s_.dur_ns[r] >= kSetupMinNs && s_.cat[r] == Category::CpuOp) long_name_[s_.name[r]] = 1;
  }
}

Timeline Attributor::build(ThreadKey t) {
  Timeline tl;
  if (!bucketed_) bucket_threads();
  // run() asks only for launching threads (the launcher of a gap's GPU event, or launching_[k]).
  std::vector<uint32_t> rows;
  if (auto it = std::find(launching_.begin(), launching_.end(), t); it != launching_.end())
    rows = std::move(buckets_[it - launching_.begin()]);
  // Parents first: by start, then longer first; a runtime call sorts inside an op that starts
  // at the same instant with the same length.
  auto kind_rank = [&](uint32_t r) {
    switch (s_.cat[r]) {
      case Category::UserAnnotation: return 0;
      case Category::PythonFunction: return 1;
      case Category::CpuOp: return 2;
      default: return 3;
    }
  };
  auto parent_first = [&](uint32_t a, uint32_t b) {
    if (s_.ts_ns[a] != s_.ts_ns[b]) return s_.ts_ns[a] < s_.ts_ns[b];
    if (s_.dur_ns[a] != s_.dur_ns[b]) return s_.dur_ns[a] > s_.dur_ns[b];
    if (kind_rank(a) != kind_rank(b)) return kind_rank(a) < kind_rank(b);
    return a < b;  // file order: identical intervals nest as written
  };
  // The rows are in start order: order each run of equal starts fully (the same result as
  // sorting everything, in linear time for distinct starts).
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && s_.ts_ns[rows[j]] == s_.ts_ns[rows[i]]) ++j;
    if (j - i > 1) std::sort(rows.begin() + i, rows.begin() + j, parent_first);
    i = j;
  }
  // Slow first calls: ops of this thread whose first call (per name and Input Dims) is
  // >= kSetupMinNs and >= kSetupRatio x the mean of the later ones, marked after the sweep
  // below. Only names with some call that long (long_name_) are counted, so the map stays small.
  struct FirstCall {
    uint32_t index;  // in rows
    int64_t later_ns = 0, later = 0;
  };
  std::unordered_map<uint64_t, FirstCall> first;
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t r = rows[i];
    if (!long_name_[s_.name[r]] || s_.cat[r] != Category::CpuOp) continue;
    auto [it, fresh] = first.try_emplace((uint64_t(s_.name[r]) << 32) | s_.input_dims[r], FirstCall{uint32_t(i)});
    if (!fresh) {
      it->second.later_ns += s_.dur_ns[r];
      ++it->second.later;
    }
  }

  // Stack sweep: each event's parent is the deepest one still open when it starts.
  const size_t n = rows.size();
  tl.parent.resize(n);
  tl.end.resize(n);
  tl.own.resize(n);
  std::vector<int32_t> stack;  // indices; their clamped ends are non-decreasing downwards
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rows[i];
    while (!stack.empty() && tl.end[stack.back()] <= s_.ts_ns[r]) stack.pop_back();
    tl.parent[i] = stack.empty() ? -1 : stack.back();
    tl.end[i] = stack.empty() ? std::max(s_.end_ns(r), s_.ts_ns[r]) : std::min(s_.end_ns(r), tl.end[stack.back()]);
    uint16_t f = 0;
    const Category c = s_.cat[r];
    const uint32_t name = s_.name[r];
    const uint8_t tr = traits(name);
    const uint16_t nf = idx_.name_flags[name];
    if (c == Category::CpuOp && (nf & kProfilerStep)) {
      // 2021 traces record the step as an operator: it is neither an op nor an annotation here.
    } else if (c == Category::CpuOp) {
      f |= kOwnOp;
      if (tr & kAtenName) f |= kOwnAten;
      if (tr & kSyncOpName) f |= kOwnSync;
    } else if (c == Category::UserAnnotation) {
      if (!(nf & kProfilerStep)) f |= kOwnAnnotation;
    } else if (c == Category::PythonFunction) {
      if (tr & kModuleName) {
        f |= kOwnAnnotation;
      } else {
        f |= kOwnAnyFrame;
        if (tr & kUserFrame) f |= kOwnFrame;
        if (tr & kCompileName) f |= kOwnSetup;
      }
    } else {  // runtime / driver
      const RtClass rc = rt_class(r);
      if (rc == kRtModule || (rc == kRtLaunch && s_.dur_ns[r] >= kLazyLaunchNs)) f |= kOwnSetup;
      if (rc == kRtSync || (rc == kRtCopyAsync && pageable_launch_[r])) f |= kOwnSync;
    }
    if (nf & kDataLoader) f |= kOwnData;
    if (tr & kOptimizerName) f |= kOwnOptimizer;
    if (nf & kCommOp) f |= kOwnComm;
    tl.own[i] = f;
    stack.push_back(static_cast<int32_t>(i));
  }
  for (const auto& [key, fc] : first) {
    const int64_t d = s_.dur_ns[rows[fc.index]];
    if (fc.later > 0 && d >= kSetupMinNs && d >= kSetupRatio * (double(fc.later_ns) / fc.later))
      tl.own[fc.index] |= kOwnSetup;
  }
  tl.rows = std::move(rows);
  return tl;
}

Node Attributor::node_of(const Timeline& tl, int32_t i) {
  // Up the chain, innermost first: the innermost op, annotation and frames; the outermost aten
  // op and blocking call; any ancestor's setup, data, optimizer and collective marks.
  Node n;
  n.row = tl.rows[i];
  for (int32_t k = i; k >= 0; k = tl.parent[k]) {
    const uint16_t f = tl.own[k];
    const uint32_t r = tl.rows[k];
    if ((f & kOwnOp) && n.op == kNoRow) n.op = r;
    if (f & kOwnAten) n.outer_aten = r;
    if ((f & kOwnAnnotation) && n.annotation == kNoRow) n.annotation = r;
    if ((f & kOwnFrame) && n.frame == kNoRow) n.frame = r;
    if ((f & (kOwnFrame | kOwnAnyFrame)) && n.any_frame == kNoRow) n.any_frame = r;
    if (f & kOwnSetup) n.setup = true;
    if (f & kOwnSync) n.sync = true, n.sync_row = r;
    if (f & kOwnData) n.data = true;
    if (f & kOwnOptimizer) n.optimizer = true;
    if (f & kOwnComm) n.comm = true;
  }
  classify(n);
  return n;
}

void Attributor::classify(Node& n) {
  const bool runtime = s_.cat[n.row] == Category::CudaRuntime || s_.cat[n.row] == Category::CudaDriver;
  if (n.setup) n.cause = IdleCause::Setup;
  else if (n.sync) n.cause = IdleCause::Sync;
  else if (n.data) n.cause = IdleCause::DataLoading;
  else if (n.optimizer) n.cause = IdleCause::Optimizer;
  else if (n.comm) n.cause = IdleCause::Collective;
  else if (runtime && rt_class(n.row) == kRtMemory) n.cause = IdleCause::Memory;
  else if (runtime) n.cause = IdleCause::Launch;
  else n.cause = IdleCause::HostCompute;
}

const Timeline& Attributor::timeline(ThreadKey t) {
  std::unique_ptr<Timeline>& tl = timelines_[t];
  if (!tl) tl = std::make_unique<Timeline>(build(t));
  return *tl;
}

uint32_t Attributor::entry_for(IdleCause c, uint32_t host, uint32_t op, uint32_t ann, uint32_t frame) {
  auto id = [&](uint32_t row) { return row < s_.size() ? s_.name[row] : row; };
  const EntryKey key{c, id(host), id(op), id(ann), id(frame)};
  auto [it, fresh] = entry_index_.try_emplace(key, static_cast<uint32_t>(out_.entries.size()));
  if (fresh) {
    IdleEntry e;
    e.cause = c;
    auto name = [&](uint32_t row) { return row < s_.size() ? std::string(s_.name_of(row)) : std::string(); };
    e.host_event = host >= kNoRow - kReasons && host != kNoRow ? kReasonText[kNoRow - 1 - host] : name(host);
    e.op = name(op);
    e.annotation = name(ann);
    e.frame = name(frame);
    out_.entries.push_back(std::move(e));
    entry_last_gap_.push_back(-1);
  }
  return it->second;
}

uint32_t Attributor::entry_for_node(const Node* n) {
  if (!n) return reason_entry(kNothingRecorded);
  uint32_t host = n->cause == IdleCause::Sync && n->sync_row != n->row &&
                                s_.cat[n->sync_row] != Category::CpuOp
                            ? n->sync_row
                            : n->row;
  const uint32_t op = n->outer_aten != kNoRow ? n->outer_aten : n->op;
  // Only the step's own range is open: one bucket for all steps, not one per step number.
  if (idx_.flag(host, kProfilerStep)) host = kNoRow - 1 - kBetweenOps;
  return entry_for(n->cause, host, op == host ? kNoRow : op, n->annotation,
                   n->frame != kNoRow ? n->frame : n->any_frame);
}

void Attributor::emit(int64_t begin, int64_t end, uint32_t entry) {
  if (end <= begin) return;
  IdleEntry& e = out_.entries[entry];
  e.ns += end - begin;
  if (entry_last_gap_[entry] != gap_no_) {
    entry_last_gap_[entry] = gap_no_;
    ++e.gaps;
  }
  if (!out_.pieces.empty() && out_.pieces.back().end == begin && out_.pieces.back().entry == entry)
    out_.pieces.back().end = end;
  else
    out_.pieces.push_back({begin, end, entry});
}

size_t Attributor::first_after(const Timeline& tl, int64_t t) const {
  // Galloping from the last answer: a few nearby loads, where a binary search over a long
  // timeline made ~20 scattered ones (200 k gaps, several searches each, in a large trace).
  const size_t n = tl.rows.size();
  auto start = [&](size_t k) { return s_.ts_ns[tl.rows[k]]; };
  const size_t h = std::min(tl.hint, n);
  size_t lo, hi;  // the answer lies in [lo, hi]
  if (h == 0 || start(h - 1) <= t) {
    lo = h;
    size_t step = 1;
    while (lo + step - 1 < n && start(lo + step - 1) <= t) lo += std::exchange(step, step * 2);
    hi = std::min(n, lo + step - 1);
  } else {
    hi = h - 1;
    size_t step = 1;
    while (hi >= step && start(hi - step) > t) hi -= std::exchange(step, step * 2);
    lo = hi >= step ? hi - step + 1 : 0;
  }
  tl.hint = static_cast<size_t>(std::upper_bound(tl.rows.begin() + lo, tl.rows.begin() + hi, t,
                                                 [&](int64_t v, uint32_t r) { return v < s_.ts_ns[r]; }) -
                                tl.rows.begin());
  return tl.hint;
}

int32_t Attributor::deepest_at(const Timeline& tl, int64_t t, size_t next) const {
  int32_t k = static_cast<int32_t>(next) - 1;
  while (k >= 0 && tl.end[k] <= t) k = tl.parent[k];
  return k;
}

std::optional<Node> Attributor::node_at(const Timeline& tl, int64_t t) {
  const int32_t k = deepest_at(tl, t, first_after(tl, t));
  if (k < 0) return std::nullopt;
  return node_of(tl, k);
}

void Attributor::sweep(ThreadKey t, int64_t x, int64_t y, uint32_t generic) {
  first_thread_ = t;
  sweep_from(t, 0, x, y, generic);
}

void Attributor::sweep_from(ThreadKey t, size_t next_thread, int64_t x, int64_t y, uint32_t generic) {
  if (y <= x) return;
  auto pick = [&](const Node* n) {
    const IdleCause c = n ? n->cause : IdleCause::Unattributed;
    const bool is_generic = c == IdleCause::Launch || c == IdleCause::HostCompute || !n;
    return generic != kNoRow && is_generic ? generic : entry_for_node(n);
  };
  // Where t has nothing open: the next launching thread (other than the first one swept).
  auto uncovered = [&](int64_t from, int64_t to) {
    size_t k = next_thread;
    while (k < launching_.size() && launching_[k] == first_thread_) ++k;
    if (k < launching_.size()) sweep_from(launching_[k], k + 1, from, to, generic);
    else emit(from, to, pick(nullptr));
  };
  const Timeline& tl = timeline(t);
  // Walk the deepest open event from x to y: it changes where the next event starts (after the
  // events ending by then have closed) and where it ends (its parent takes over).
  size_t next = first_after(tl, x);
  int32_t cur = deepest_at(tl, x, next);
  int64_t at = x;
  while (at < y) {
    const int64_t next_start = next < tl.rows.size() ? s_.ts_ns[tl.rows[next]] : INT64_MAX;
    const int64_t cur_end = cur >= 0 ? tl.end[cur] : INT64_MAX;
    const int64_t to = std::min({next_start, cur_end, y});
    if (to > at) {
      if (cur < 0) {
        uncovered(at, to);
      } else {
        const Node n = node_of(tl, cur);
        emit(at, to, pick(&n));
      }
      at = to;
    }
    if (at >= y) break;
    if (cur >= 0 && cur_end <= at) {
      while (cur >= 0 && tl.end[cur] <= at) cur = tl.parent[cur];  // closes before the next opens
    } else {
      cur = static_cast<int32_t>(next++);
      while (cur >= 0 && tl.end[cur] <= at) cur = tl.parent[cur];  // a zero-length event
    }
  }
}

void Attributor::run() {
  const std::span<const uint32_t> gpu = idx_.windowed(idx_.gpu);
  if (gpu.empty()) return;
  out_.present = true;
  pageable_launch_.assign(s_.size(), 0);
  std::vector<int8_t> pageable_name(s_.strings.size(), -1);  // a copy's name parsed once, not per copy
  for (uint32_t m : idx_.memcpys) {
    const uint32_t rt = idx_.launcher(m);
    if (rt == kNoRow) continue;
    int8_t& pageable = pageable_name[s_.name[m]];
    if (pageable < 0) pageable = parse_copy_name(s_.name_of(m)).second == "pageable";
    if (pageable) pageable_launch_[rt] = 1;
  }
  // The threads that launch GPU work, most launches first (without correlation ids: those
  // with runtime calls in the window). The first stands in for events with no known launch.
  {
    std::vector<int64_t> launches(s_.threads.size(), 0);
    bool any = false;
    for (uint32_t g : gpu)
      if (uint32_t rt = idx_.launcher(g); rt != kNoRow) ++launches[thread_of(rt)], any = true;
    if (!any)
      for (uint32_t r : idx_.runtime)
        if (idx_.in_window(r)) ++launches[thread_of(r)];
    // Ties in (pid, tid) order, so the order does not depend on which thread the file named first.
    std::vector<std::tuple<int64_t, int64_t, int64_t, ThreadKey>> order;
    for (ThreadKey k = 0; k < launches.size(); ++k)
      if (launches[k] > 0) order.emplace_back(-launches[k], s_.threads[k].pid, s_.threads[k].tid, k);
    std::sort(order.begin(), order.end());
    for (const auto& o : order) launching_.push_back(std::get<3>(o));
  }
  // Pieces: about one per gap or a few (their list grew by doubling, touching twice its memory).
  {
    size_t gaps = 0;
    int64_t end = INT64_MIN;
    for (uint32_t g : gpu) {
      gaps += end != INT64_MIN && s_.ts_ns[g] > end;
      end = std::max(end, s_.end_ns(g));
    }
    out_.pieces.reserve(2 * gaps + 16);
  }
  // Stream Wait Events per GPU stream, by start.
  std::vector<std::vector<int64_t>> stream_waits(s_.threads.size());
  for (uint32_t r : idx_.cuda_sync)
    if (s_.name_of(r) == "Stream Wait Event") stream_waits[thread_of(r)].push_back(s_.ts_ns[r]);

  // Latest end so far per GPU stream.
  std::vector<int64_t> stream_end(s_.threads.size(), INT64_MIN);
  int64_t max_end = INT64_MIN;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int64_t b = s_.ts_ns[gpu[i]];
    if (max_end != INT64_MIN && b > max_end) {
      const int64_t a = max_end;
      ++out_.gaps;
      gap_no_ = out_.gaps;
      // The launch the GPU waited for: of the events starting at b, the one launched last.
      uint32_t g = gpu[i], rt = kNoRow;
      for (size_t j = i; j < gpu.size() && s_.ts_ns[gpu[j]] == b; ++j) {
        const uint32_t r = idx_.launcher(gpu[j]);
        if (r != kNoRow && (rt == kNoRow || s_.ts_ns[r] > s_.ts_ns[rt])) rt = r, g = gpu[j];
      }
      if (rt == kNoRow) {
        if (!launching_.empty()) sweep(launching_.front(), a, b, kNoRow);
        else emit(a, b, reason_entry(kNoLauncher));
      } else {
        const Timeline& tl = timeline(thread_of(rt));
        const int64_t rt_end = s_.end_ns(rt);
        if (s_.ts_ns[rt] <= a && rt_end <= a) {
          // Queued before the gap: the GPU, not the host, held it back.
          uint32_t entry;
          const std::optional<Node> at_launch = node_at(tl, s_.ts_ns[rt]);
          const Node* n = at_launch ? &*at_launch : nullptr;
          const uint32_t op = n ? (n->outer_aten != kNoRow ? n->outer_aten : n->op) : kNoRow;
          const std::vector<int64_t>& sw = stream_waits[thread_of(g)];
          const bool waited = std::lower_bound(sw.begin(), sw.end(), rt_end) != std::upper_bound(sw.begin(), sw.end(), b);
          if (s_.cat[g] == Category::Kernel && idx_.flag(g, kCommKernel))
            entry = entry_for(IdleCause::Collective, g, op, n ? n->annotation : kNoRow, kNoRow);
          else if (waited)
            entry = entry_for(IdleCause::StreamWait, g, op, n ? n->annotation : kNoRow, kNoRow);
          else if (b - a < kQueuedOverheadNs)
            entry = entry_for(IdleCause::GpuOverhead, kNoRow - 1 - kGpuSwitch, kNoRow, kNoRow, kNoRow);
          else if (stream_end[thread_of(g)] == a)
            entry = entry_for(IdleCause::Untraced, kNoRow - 1 - kUntracedWork, kNoRow, kNoRow, kNoRow);
          else
            entry = reason_entry(kQueuedLate);
          emit(a, b, entry);
        } else {
          // The GPU waited for the host. A blocking call open when it ran dry drained it.
          uint32_t generic = kNoRow;
          std::optional<Node> drain_node = node_at(tl, a);
          if (!drain_node || drain_node->cause != IdleCause::Sync) drain_node = node_at(tl, a - kSyncReturnSlackNs);
          const Node* drain = drain_node ? &*drain_node : nullptr;
          if (drain && drain->cause == IdleCause::Sync) generic = entry_for_node(drain);
          const std::optional<Node> launch_node = node_at(tl, s_.ts_ns[rt]);
          const Node* launch = launch_node ? &*launch_node : nullptr;
          const uint32_t launch_entry = entry_for_node(launch);
          if (generic == kNoRow && b - a < kLaunchGapNs && launch && launch->cause == IdleCause::Launch)
            generic = launch_entry;
          const int64_t host_end = std::min(b, std::max(a, rt_end));
          sweep(thread_of(rt), a, host_end, generic);
          if (host_end < b) emit(host_end, b, generic != kNoRow ? generic : launch_entry);
        }
      }
    }
    max_end = std::max(max_end, s_.end_ns(gpu[i]));
    int64_t& stream_last = stream_end[thread_of(gpu[i])];
    stream_last = std::max(stream_last, s_.end_ns(gpu[i]));
  }

  for (const IdleEntry& e : out_.entries) out_.idle_ns += e.ns;
  fold_small_entries();
  for (IdleEntry& e : out_.entries) {
    out_.by_cause_ns[static_cast<int>(e.cause)] += e.ns;
    e.pct_of_idle = out_.idle_ns > 0 ? 100.0 * e.ns / out_.idle_ns : 0;
    e.pct_of_step = steps_.pct(e.ns);
  }
  out_.unattributed_ns = out_.cause_ns(IdleCause::Unattributed);
}

void Attributor::fold_small_entries() {
  const size_t n = out_.entries.size();
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  auto& es = out_.entries;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (es[a].ns != es[b].ns) return es[a].ns > es[b].ns;
    return a < b;
  });
  std::vector<IdleEntry> kept;
  std::vector<uint32_t> remap(n);
  int32_t folded[kIdleCauses];
  std::fill(std::begin(folded), std::end(folded), -1);
  std::vector<int64_t> folded_count(kIdleCauses, 0);
  // Kept: the kMaxEntries largest, and the largest of every cause (so each cause names its top
  // host event even when other causes fill the list).
  bool cause_seen[kIdleCauses] = {};
  for (size_t k = 0; k < n; ++k) {
    IdleEntry& e = es[order[k]];
    const bool first_of_cause = !cause_seen[static_cast<int>(e.cause)];
    cause_seen[static_cast<int>(e.cause)] = true;
    if (k < kMaxEntries || first_of_cause) {
      remap[order[k]] = static_cast<uint32_t>(kept.size());
      kept.push_back(std::move(e));
      continue;
    }
    const int c = static_cast<int>(e.cause);
    if (folded[c] < 0) {
      folded[c] = static_cast<int32_t>(kept.size());
      IdleEntry f;
      f.cause = e.cause;
      kept.push_back(std::move(f));
    }
    IdleEntry& f = kept[folded[c]];
    f.ns += e.ns;
    f.gaps += e.gaps;  // an upper bound: a gap may hold several folded buckets
    ++folded_count[c];
    remap[order[k]] = static_cast<uint32_t>(folded[c]);
  }
  for (int c = 0; c < kIdleCauses; ++c)
    if (folded[c] >= 0) kept[folded[c]].host_event = "(" + std::to_string(folded_count[c]) + " other host events)";
  // Largest first; the folded buckets move too, so pieces are remapped through both steps.
  std::vector<uint32_t> by_size(kept.size()), final_pos(kept.size());
  for (uint32_t i = 0; i < kept.size(); ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(), [&](uint32_t a, uint32_t b) { return kept[a].ns > kept[b].ns; });
  std::vector<IdleEntry> sorted;
  sorted.reserve(kept.size());
  for (uint32_t i = 0; i < by_size.size(); ++i) {
    final_pos[by_size[i]] = i;
    sorted.push_back(std::move(kept[by_size[i]]));
  }
  out_.entries = std::move(sorted);
  for (uint32_t& r : remap) r = final_pos[r];
  for (IdlePiece& p : out_.pieces) p.entry = remap[p.entry];
}

}  // namespace

void analyse_idle_attribution(const TraceIndex& idx, const StepSummary& steps, GpuTime& gpu) {
  gpu.attribution = IdleAttribution{};
  Attributor(idx, steps, gpu.attribution).run();
}

}  // namespace ts::analysis
