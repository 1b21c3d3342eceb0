#include "trace/parser.h"

#include <algorithm>
#include <cstring>

#include "trace/decimal.h"
#include "trace/json_scan.h"
#include "trace/same_bytes.h"
#include "util/error.h"

namespace ts::trace::detail {

#define KEY_IS(k, lit) (std::memcmp((k).data(), lit, sizeof(lit) - 1) == 0)

static bool is_flow(Phase ph) { return ph == Phase::FlowStart || ph == Phase::FlowStep || ph == Phase::FlowEnd; }

static Phase phase_of(std::string_view s) {
  if (s.size() != 1) return Phase::Other;
  switch (s[0]) {
    case 'X': return Phase::Complete;
    case 'i':
    case 'I': return Phase::Instant;
    case 'B': return Phase::Begin;
    case 'E': return Phase::End;
    case 'C': return Phase::Counter;
    case 's': return Phase::FlowStart;
    case 't': return Phase::FlowStep;
    case 'f': return Phase::FlowEnd;
    case 'M': return Phase::Metadata;
    default: return Phase::Other;
  }
}

Category Parser::category_of(std::string_view cat) {
  for (const auto& e : cat_cache_)
    if (e.text.size() == cat.size() && same_bytes(e.text.data(), cat.data(), cat.size())) return e.cat;
  Category c = parse_category(cat);
  // The 2021 form spells its categories capitalised.
  if (cat == "Operator" || cat == "Runtime" || cat == "Kernel" || cat == "Memcpy" || cat == "Memset")
    saw_2021_cats_ = true;
  if (cat_cache_.size() < 64) cat_cache_.push_back({std::string(cat), c});
  return c;
}

// The members an event's reader keeps: each key maps to a field, each field to its value reader.
namespace {
enum EventField : uint8_t { kEvSkip, kEvPh, kEvTs, kEvId, kEvCat, kEvPid, kEvTid, kEvDur, kEvName, kEvArgs };
enum ArgField : uint8_t {
  kArgSkip, kArgGrid, kArgName, kArgBlock, kArgBytes, kArgDtype, kArgDevice, kArgInputDims, kArgInputType,
  kArgGroupSize, kArgCorrelation, kArgExternalId, kArgDeviceType, kArgWarpsPerSm, kArgSharedMemory,
  kArgBlocksPerSm, kArgInNelems, kArgTotalReserved, kArgOutNelems, kArgTotalAllocated, kArgCollective,
  kArgGroupName, kArgGroupRanks, kArgRegisters, kArgBandwidth, kArgOccupancy,
};

uint8_t event_field(std::string_view k) {
  switch (k.size()) {
    case 2:
      if (KEY_IS(k, "ph")) return kEvPh;
      if (KEY_IS(k, "ts")) return kEvTs;
      if (KEY_IS(k, "id")) return kEvId;
      break;
    case 3:
      if (KEY_IS(k, "cat")) return kEvCat;
      if (KEY_IS(k, "pid")) return kEvPid;
      if (KEY_IS(k, "tid")) return kEvTid;
      if (KEY_IS(k, "dur")) return kEvDur;
      break;
    case 4:
      if (KEY_IS(k, "name")) return kEvName;
      if (KEY_IS(k, "args")) return kEvArgs;
      break;
  }
  return kEvSkip;
}

uint8_t arg_field(std::string_view k) {
  switch (k.size()) {
    case 4:
      if (KEY_IS(k, "grid")) return kArgGrid;
      if (KEY_IS(k, "name")) return kArgName;
      break;
    case 5:
      if (KEY_IS(k, "block")) return kArgBlock;
      if (KEY_IS(k, "bytes") || KEY_IS(k, "Bytes")) return kArgBytes;
      if (KEY_IS(k, "dtype")) return kArgDtype;
      break;
    case 6:
      if (KEY_IS(k, "device")) return kArgDevice;
      break;
    case 9:
      if (KEY_IS(k, "Device Id")) return kArgDevice;
      break;
    case 10:
      if (KEY_IS(k, "Input Dims")) return kArgInputDims;
      if (KEY_IS(k, "Input type")) return kArgInputType;
      if (KEY_IS(k, "Group size")) return kArgGroupSize;
      break;
    case 11:
      if (KEY_IS(k, "correlation")) return kArgCorrelation;
      if (KEY_IS(k, "External id") || KEY_IS(k, "external id")) return kArgExternalId;
      if (KEY_IS(k, "Device Type")) return kArgDeviceType;
      break;
    case 12:
      if (KEY_IS(k, "warps per SM")) return kArgWarpsPerSm;
      break;
    case 13:
      if (KEY_IS(k, "shared memory")) return kArgSharedMemory;
      if (KEY_IS(k, "blocks per SM")) return kArgBlocksPerSm;
      if (KEY_IS(k, "In msg nelems")) return kArgInNelems;
      break;
    case 14:
      if (KEY_IS(k, "Total Reserved")) return kArgTotalReserved;
      if (KEY_IS(k, "Out msg nelems")) return kArgOutNelems;
      break;
    case 15:
      if (KEY_IS(k, "Total Allocated")) return kArgTotalAllocated;
      if (KEY_IS(k, "Collective name")) return kArgCollective;
      break;
    case 18:
      if (KEY_IS(k, "Process Group Name")) return kArgGroupName;
      break;
    case 19:
      if (KEY_IS(k, "Process Group Ranks")) return kArgGroupRanks;
      break;
    case 20:
      if (KEY_IS(k, "registers per thread")) return kArgRegisters;
      break;
    case 23:
      if (KEY_IS(k, "memory bandwidth (GB/s)")) return kArgBandwidth;
      break;
    case 25:
      if (KEY_IS(k, "est. achieved occupancy %")) return kArgOccupancy;
      break;
  }
  return kArgSkip;
}
}  // namespace

template <class FieldOf, class Value, class Preset>
const char* Parser::parse_object(const char* p, ObjectShapes& shapes, const char* what, FieldOf field_of,
                                 Value&& value, Preset&& preset) {
  // p at '{'. First along the layouts learnt so far, literal by literal.
  const char* const start = p;
  uint16_t node = ObjectShapes::kRoot;
  const bool layouts = opt_.learn_layouts && shapes.in_use();
  while (layouts) {
    const uint16_t c = shapes.match(node, p);
    if (c == ObjectShapes::kNone) break;
    const ObjectShapes::Node& n = shapes.node(c);
    if (n.presets) {
      bool skip = false;
      for (uint8_t k = 0; k < n.presets; ++k) skip |= preset(n.preset_field[k], n.preset_code[k]);
      if (skip) {
        shapes.tally(false);
        return skip_rest_of_object(p + n.len) + 1;
      }
    }
    if (n.field == ObjectShapes::kClose) {
      shapes.tally(false);
      return p + n.len;
    }
    node = c;
    if (n.field == ObjectShapes::kNoValue) {
      p += n.len;
      continue;
    }
    p = value(n.field, p + n.len);
    if (object_skipped_) [[unlikely]] {
      object_skipped_ = false;
      shapes.tally(false);
      return p + 1;
    }
  }
  // Member by member from where the layouts part (at the '{', or just after a value), noting
  // this object's literals to learn its layout.
  constexpr size_t kMaxSteps = 40;
  ObjectShapes::Step steps[kMaxSteps];
  size_t n = 0;
  bool learnable = true;
  const char* lit = p;
  auto note = [&](const char* to, uint8_t field) {
    if (!layouts) return;
    if (n < kMaxSteps && to - start < (1 << 20)) {
      steps[n++] = {static_cast<uint32_t>(lit - start), static_cast<uint32_t>(to - start), field};
    } else {
      learnable = false;
    }
  };
  const char* after = members_from(p, node != ObjectShapes::kRoot, what, [&](std::string_view key, const char* v) {
    const uint8_t field = field_of(key);
    note(v, field);
    const_code_ = -1;
    lit = value(field, v);
    // A constant value (its reader said which) is noted, to join the literals around it.
    if (const_code_ >= 0 && n > 0 && steps[n - 1].to == static_cast<uint32_t>(v - start) && const_end_ - start < (1 << 20)) {
      steps[n - 1].code = const_code_;
      steps[n - 1].value_end = static_cast<uint32_t>(const_end_ - start);
    }
    return lit;
  });
  // An object whose rest a value skipped has no closing literal; the layout up to that value is
  // still worth learning.
  if (!object_skipped_) note(after, ObjectShapes::kClose);
  object_skipped_ = false;
  if (layouts) {
    shapes.tally(true);
    if (learnable) shapes.learn(node, start, steps, n);
  }
  return after;
}

const char* Parser::parse_event(const char* p) {
  if (*p != '{') unexpected(p, "an event object '{'");
  PendingEvent ev;
  p = parse_object(p, event_shapes_, "an event", event_field,
                   [&](uint8_t field, const char* v) { return event_value(field, v, ev); },
                   [&](uint8_t field, uint8_t code) {
                     // What event_value made of the constant that the literal holds.
                     if (field == kEvCat) {
                       ev.cat = static_cast<Category>(code);
                       return false;
                     }
                     ev.ph = static_cast<Phase>(code);
                     ev.has_ph = true;
                     return is_flow(ev.ph) && !opt_.keep_flows;
                   });
  commit(ev, p);
  return p;
}

inline const char* Parser::event_value(uint8_t field, const char* v, PendingEvent& ev) {
  std::string_view s;
  switch (field) {
    case kEvPh:
      if (*v != '"') unexpected(v, "a string for \"ph\"");
      v = read_short_string(v, s);
      ev.ph = phase_of(s);
      ev.has_ph = true;
      const_code_ = static_cast<int16_t>(ev.ph);
      const_end_ = v;
      if (is_flow(ev.ph) && !opt_.keep_flows) {
        // Only counted: nothing after "ph" is read (Kineto writes it first). A quarter of the
        // parse went to these events' members (docs/BENCHMARKS.md, session 10).
        v = skip_rest_of_object(v);
        object_skipped_ = true;  // after the skip: one that needs a refill reads the event again
        return v;
      }
      return v;
    case kEvTs: return read_time(v, ev.ts, "ts");
    case kEvId: {
      int64_t id;
      bool ok;
      v = read_scaled(v, 0, id, ok);
      if (ok) ev.flow_id = id;
      return v;
    }
    case kEvCat:
      if (*v != '"') return skip_value(v);
      v = read_short_string(v, s);
      ev.cat = category_of(s);
      const_code_ = static_cast<int16_t>(ev.cat);
      const_end_ = v;
      return v;
    case kEvPid: return read_id(v, ev.pid);
    case kEvTid: return read_id(v, ev.tid);
    case kEvDur: return read_time(v, ev.dur, "dur");
    case kEvName:
      if (*v != '"') return skip_value(v);
      v = read_string(v, s);
      ev.name = store_.strings.intern(s);
      return v;
    case kEvArgs:
      if (*v != '{') return skip_value(v);
      return parse_event_args(v, ev);
  }
  return skip_value(v);
}

const char* Parser::parse_event_args(const char* p, PendingEvent& ev) {
  ++depth_;
  p = parse_object(p, args_shapes_[static_cast<size_t>(ev.cat)], "event args", arg_field,
                   [&](uint8_t field, const char* v) { return arg_value(field, v, ev); },
                   [](uint8_t, uint8_t) { return false; });  // args have no constants
  --depth_;
  return p;
}

inline const char* Parser::arg_value(uint8_t field, const char* v, PendingEvent& ev) {
  switch (field) {
    case kArgGrid: return read_int3(v, ev.args().grid);
    case kArgName:
      if (*v == '"') {
        std::string_view s;
        v = read_string(v, s);
        ev.meta_name = store_.strings.intern(s);
        return v;
      }
      break;
    case kArgBlock: return read_int3(v, ev.args().block);
    case kArgBytes: return read_int(v, ev.args().bytes);
    case kArgDtype: return read_interned(v, ev.comm_args().dtype);
    case kArgDevice: return read_int_as(v, ev.args().device_id);
    case kArgInputDims: return read_raw_interned(v, ev.dims);
    case kArgInputType: return read_raw_interned(v, ev.types);
    case kArgGroupSize: return read_int_as(v, ev.comm_args().group_size);
    case kArgCorrelation: return read_int(v, ev.corr);
    case kArgExternalId: return read_int(v, ev.ext);
    case kArgDeviceType: return read_int_as(v, ev.args().device_type);
    case kArgWarpsPerSm: return read_float(v, ev.args().warps_per_sm);
    case kArgSharedMemory: return read_int_as(v, ev.args().shared_memory);
    case kArgBlocksPerSm: return read_float(v, ev.args().blocks_per_sm);
    case kArgInNelems: return read_int(v, ev.comm_args().in_nelems);
    case kArgTotalReserved: return read_int(v, ev.args().total_reserved);
    case kArgOutNelems: return read_int(v, ev.comm_args().out_nelems);
    case kArgTotalAllocated: return read_int(v, ev.args().total_allocated);
    case kArgCollective: return read_interned(v, ev.comm_args().collective);
    case kArgGroupName: return read_interned(v, ev.comm_args().group_name);
    case kArgGroupRanks: return read_interned(v, ev.comm_args().group_ranks);
    case kArgRegisters: return read_int_as(v, ev.args().registers_per_thread);
    case kArgBandwidth: return read_float(v, ev.args().bandwidth_gbps);
    case kArgOccupancy: return read_float(v, ev.args().occupancy_pct);
  }
  return skip_value(v);
}

void Parser::commit(PendingEvent& ev, const char* p) {
  if (!ev.has_ph) return;  // not a trace event (Chrome's viewer ignores these too)
  const bool flow = is_flow(ev.ph);
  if (flow && !opt_.keep_flows) {
    ++store_.meta.flow_events;
    return;
  }
  if (store_.size() >= max_rows()) [[unlikely]] fail(p, row_limit());
  Category c = ev.cat;
  if (ev.name == memory_id_) {
    c = Category::Memory;
  } else if (c == Category::Unknown && bare_ && ev.ph == Phase::Complete) {
    c = Category::CpuOp;  // the bare-array form records only operators and record_function ranges
  } else if (c == Category::CudaRuntime && !store_.meta.is_rocm) {
    std::string_view n = store_.strings.view(ev.name);
    if (n.size() > 3 && n.compare(0, 3, "hip") == 0) store_.meta.is_rocm = true;
  }
  uint32_t args_idx = kNoArgs;
  const bool keep_args = ev.has_args && (c == Category::Kernel || c == Category::GpuMemcpy ||
                                         c == Category::GpuMemset || c == Category::Memory);
  // A collective's parameters count only with its name (record_param_comms without args says nothing).
  if (ev.has_comm && ev.comm_args().collective != kNoString) {
    EventArgs a = keep_args ? ev.args() : EventArgs{};
    a.comm = static_cast<uint32_t>(store_.comm_args.size());
    store_.comm_args.push_back(ev.comm_args());
    args_idx = store_.add_args(a);
  } else if (keep_args) {
    args_idx = store_.add_args(ev.args());
  }
  int64_t corr = ev.corr;
  if (flow && ev.flow_id != kNone) corr = ev.flow_id;
  if (ev.ph == Phase::Metadata) {
    if (ev.name == process_name_id_) store_.process_names.push_back({ev.pid, kNone, ev.meta_name});
    if (ev.name == thread_name_id_) store_.thread_names.push_back({ev.pid, ev.tid, ev.meta_name});
  }
  int64_t dur = (ev.ph == Phase::Complete) ? ev.dur : 0;
  store_.add(ev.name, c, ev.ph, ev.pid, ev.tid, ev.ts, dur, corr, ev.ext, args_idx, ev.dims, ev.types);
}

}  // namespace ts::trace::detail
