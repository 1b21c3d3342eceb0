#include "trace/parser.h"

#include <algorithm>
#include <cstring>

#include "trace/decimal.h"
#include "trace/json_scan.h"
#include "util/error.h"

namespace ts::trace::detail {

#define KEY_IS(k, lit) (std::memcmp((k).data(), lit, sizeof(lit) - 1) == 0)

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
    if (e.text.size() == cat.size() && std::memcmp(e.text.data(), cat.data(), cat.size()) == 0) return e.cat;
  Category c = parse_category(cat);
  // The 2021 form spells its categories capitalised.
  if (cat == "Operator" || cat == "Runtime" || cat == "Kernel" || cat == "Memcpy" || cat == "Memset")
    saw_2021_cats_ = true;
  if (cat_cache_.size() < 64) cat_cache_.push_back({std::string(cat), c});
  return c;
}

const char* Parser::parse_event(const char* p) {
  if (*p != '{') unexpected(p, "an event object '{'");
  PendingEvent ev;
  std::string_view s;
  p = for_each_member(p, "an event", [&](std::string_view k, const char* v) -> const char* {
    switch (k.size()) {
      case 2:
        if (KEY_IS(k, "ph")) {
          if (*v != '"') unexpected(v, "a string for \"ph\"");
          v = read_short_string(v, s);
          ev.ph = phase_of(s);
          ev.has_ph = true;
          return v;
        }
        if (KEY_IS(k, "ts")) return read_time(v, ev.ts, "ts");
        if (KEY_IS(k, "id")) {
          int64_t id;
          bool ok;
          v = read_scaled(v, 0, id, ok);
          if (ok) ev.flow_id = id;
          return v;
        }
        break;
      case 3:
        if (KEY_IS(k, "cat")) {
          if (*v != '"') return skip_value(v);
          v = read_short_string(v, s);
          ev.cat = category_of(s);
          return v;
        }
        if (KEY_IS(k, "pid")) return read_id(v, ev.pid);
        if (KEY_IS(k, "tid")) return read_id(v, ev.tid);
        if (KEY_IS(k, "dur")) return read_time(v, ev.dur, "dur");
        break;
      case 4:
        if (KEY_IS(k, "name")) {
          if (*v != '"') return skip_value(v);
          v = read_string(v, s);
          ev.name = store_.strings.intern(s);
          return v;
        }
        if (KEY_IS(k, "args")) {
          if (*v != '{') return skip_value(v);
          return parse_event_args(v, ev);
        }
        break;
    }
    return skip_value(v);
  });
  commit(ev, p);
  return p;
}

const char* Parser::parse_event_args(const char* p, PendingEvent& ev) {
  ++depth_;
  EventArgs& a = ev.a;
  p = for_each_member(p, "event args", [&](std::string_view k, const char* v) -> const char* {
    switch (k.size()) {
      case 4:
        if (KEY_IS(k, "grid")) return ev.has_args = true, read_int3(v, a.grid);
        if (KEY_IS(k, "name") && *v == '"') {
          std::string_view s;
          v = read_string(v, s);
          ev.meta_name = store_.strings.intern(s);
          return v;
        }
        break;
      case 5:
        if (KEY_IS(k, "block")) return ev.has_args = true, read_int3(v, a.block);
        if (KEY_IS(k, "bytes") || KEY_IS(k, "Bytes")) return ev.has_args = true, read_int(v, a.bytes);
        if (KEY_IS(k, "dtype")) return ev.has_comm = true, read_interned(v, ev.comm.dtype);
        break;
      case 6:
        if (KEY_IS(k, "device")) return ev.has_args = true, read_int_as(v, a.device_id);
        break;
      case 9:
        if (KEY_IS(k, "Device Id")) return ev.has_args = true, read_int_as(v, a.device_id);
        break;
      case 10:
        if (KEY_IS(k, "Input Dims")) return read_raw_interned(v, ev.dims);
        if (KEY_IS(k, "Input type")) return read_raw_interned(v, ev.types);
        if (KEY_IS(k, "Group size")) return ev.has_comm = true, read_int_as(v, ev.comm.group_size);
        break;
      case 11:
        if (KEY_IS(k, "correlation")) return read_int(v, ev.corr);
        if (KEY_IS(k, "External id") || KEY_IS(k, "external id")) return read_int(v, ev.ext);
        if (KEY_IS(k, "Device Type")) return ev.has_args = true, read_int_as(v, a.device_type);
        break;
      case 12:
        if (KEY_IS(k, "warps per SM")) return ev.has_args = true, read_float(v, a.warps_per_sm);
        break;
      case 13:
        if (KEY_IS(k, "shared memory")) return ev.has_args = true, read_int_as(v, a.shared_memory);
        if (KEY_IS(k, "blocks per SM")) return ev.has_args = true, read_float(v, a.blocks_per_sm);
        if (KEY_IS(k, "In msg nelems")) return ev.has_comm = true, read_int(v, ev.comm.in_nelems);
        break;
      case 14:
        if (KEY_IS(k, "Total Reserved")) return ev.has_args = true, read_int(v, a.total_reserved);
        if (KEY_IS(k, "Out msg nelems")) return ev.has_comm = true, read_int(v, ev.comm.out_nelems);
        break;
      case 15:
        if (KEY_IS(k, "Total Allocated")) return ev.has_args = true, read_int(v, a.total_allocated);
        if (KEY_IS(k, "Collective name")) return ev.has_comm = true, read_interned(v, ev.comm.collective);
        break;
      case 18:
        if (KEY_IS(k, "Process Group Name")) return ev.has_comm = true, read_interned(v, ev.comm.group_name);
        break;
      case 19:
        if (KEY_IS(k, "Process Group Ranks")) return ev.has_comm = true, read_interned(v, ev.comm.group_ranks);
        break;
      case 20:
        if (KEY_IS(k, "registers per thread")) return ev.has_args = true, read_int_as(v, a.registers_per_thread);
        break;
      case 23:
        if (KEY_IS(k, "memory bandwidth (GB/s)")) return ev.has_args = true, read_float(v, a.bandwidth_gbps);
        break;
      case 25:
        if (KEY_IS(k, "est. achieved occupancy %")) return ev.has_args = true, read_float(v, a.occupancy_pct);
        break;
    }
    return skip_value(v);
  });
  --depth_;
  return p;
}

void Parser::commit(const PendingEvent& ev, const char* p) {
  if (!ev.has_ph) return;  // not a trace event (Chrome's viewer ignores these too)
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
  if (ev.has_comm && ev.comm.collective != kNoString) {
    EventArgs a = keep_args ? ev.a : EventArgs{};
    a.comm = static_cast<uint32_t>(store_.comm_args.size());
    store_.comm_args.push_back(ev.comm);
    args_idx = store_.add_args(a);
  } else if (keep_args) {
    args_idx = store_.add_args(ev.a);
  }
  int64_t corr = ev.corr;
  if ((ev.ph == Phase::FlowStart || ev.ph == Phase::FlowStep || ev.ph == Phase::FlowEnd) && ev.flow_id != kNone)
    corr = ev.flow_id;
  if (ev.ph == Phase::Metadata) {
    if (ev.name == process_name_id_) store_.process_names.push_back({ev.pid, kNone, ev.meta_name});
    if (ev.name == thread_name_id_) store_.thread_names.push_back({ev.pid, ev.tid, ev.meta_name});
  }
  int64_t dur = (ev.ph == Phase::Complete) ? ev.dur : 0;
  store_.add(ev.name, c, ev.ph, ev.pid, ev.tid, ev.ts, dur, corr, ev.ext, args_idx, ev.dims, ev.types);
}

}  // namespace ts::trace::detail
