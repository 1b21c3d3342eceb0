#pragma once
// Builds small synthetic EventStores for analysis tests. Times are given in µs (as in traces)
// and stored in ns.
#include <string_view>

#include "trace/event_store.h"

namespace ts::analysis::testing {

using trace::Category;
using trace::EventArgs;
using trace::Phase;

struct StoreBuilder {
  trace::EventStore s;
  static constexpr int64_t kHostPid = 100, kHostTid = 100;

  uint32_t id(std::string_view n) { return s.strings.intern(n); }
  static int64_t ns(double us) { return static_cast<int64_t>(us * 1000); }

  size_t host(std::string_view name, double ts, double dur, Category c = Category::CpuOp,
              int64_t tid = kHostTid) {
    return s.add(id(name), c, Phase::Complete, kHostPid, tid, ns(ts), ns(dur));
  }
  size_t op_with_shapes(std::string_view name, double ts, double dur, std::string_view dims,
                        std::string_view types) {
    return s.add(id(name), Category::CpuOp, Phase::Complete, kHostPid, kHostTid, ns(ts), ns(dur),
                 trace::kNone, trace::kNone, trace::kNoArgs, id(dims), id(types));
  }
  size_t runtime(std::string_view name, double ts, double dur, int64_t corr, int64_t tid = kHostTid) {
    return s.add(id(name), Category::CudaRuntime, Phase::Complete, kHostPid, tid, ns(ts),
                 ns(dur), corr);
  }
  size_t kernel(std::string_view name, double ts, double dur, int64_t corr, int64_t stream = 7,
                int grid = 0, float occupancy = -1, int64_t device = 0) {
    EventArgs a;
    a.grid[0] = grid;
    a.grid[1] = a.grid[2] = grid > 0 ? 1 : 0;
    a.occupancy_pct = occupancy;
    a.device_id = static_cast<int32_t>(device);
    return s.add(id(name), Category::Kernel, Phase::Complete, device, stream, ns(ts), ns(dur), corr,
                 trace::kNone, s.add_args(a));
  }
  size_t copy(std::string_view name, double ts, double dur, int64_t corr, int64_t bytes,
              int64_t stream = 7, Category c = Category::GpuMemcpy) {
    EventArgs a;
    a.bytes = bytes;
    return s.add(id(name), c, Phase::Complete, 0, stream, ns(ts), ns(dur), corr, trace::kNone,
                 s.add_args(a));
  }
  size_t sync_event(std::string_view name, double ts, double dur, int64_t corr) {
    return s.add(id(name), Category::CudaSync, Phase::Complete, 0, 7, ns(ts), ns(dur), corr);
  }
  size_t memory(double ts, int64_t allocated, int64_t reserved, int64_t bytes = 0, int device = 0,
                int device_type = 1) {
    EventArgs a;
    a.device_type = device_type;
    a.device_id = device;
    a.bytes = bytes;
    a.total_allocated = allocated;
    a.total_reserved = reserved;
    return s.add(id("[memory]"), Category::Memory, Phase::Instant, kHostPid, kHostTid, ns(ts), 0,
                 trace::kNone, trace::kNone, s.add_args(a));
  }
  void device(int id_, int64_t total_mem, int sms, int major, int minor, std::string name = "GPU") {
    trace::DeviceProperties p;
    p.id = id_;
    p.name = std::move(name);
    p.total_global_mem = total_mem;
    p.num_sms = sms;
    p.compute_major = major;
    p.compute_minor = minor;
    s.meta.devices.push_back(p);
  }
};

}  // namespace ts::analysis::testing

namespace ts::analysis {
// Nanoseconds in a microsecond: the tests' times in the traces' unit.
inline constexpr int64_t us = 1000;
}  // namespace ts::analysis
