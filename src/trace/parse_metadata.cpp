#include "trace/parser.h"

#include <algorithm>
#include <cstring>

#include "trace/decimal.h"
#include "trace/json_scan.h"
#include "util/error.h"

namespace ts::trace::detail {

static bool contains_amd(std::string_view n) {
  return n.find("AMD") != std::string_view::npos || n.find("Radeon") != std::string_view::npos ||
         n.find("Instinct") != std::string_view::npos;
}

const char* Parser::parse_device(const char* p) {
  if (*p != '{') return skip_value(p);
  DeviceProperties d;
  ++depth_;
  p = for_each_member(p, "deviceProperties", [&](std::string_view k, const char* v) -> const char* {
    if (k == "id") return read_int_as(v, d.id);
    if (k == "name" && *v == '"') {
      std::string_view s;
      v = read_string(v, s);
      d.name.assign(s);
      return v;
    }
    if (k == "totalGlobalMem") return read_int(v, d.total_global_mem);
    if (k == "computeMajor") return read_int_as(v, d.compute_major);
    if (k == "computeMinor") return read_int_as(v, d.compute_minor);
    if (k == "numSms") return read_int_as(v, d.num_sms);
    if (k == "maxThreadsPerMultiprocessor") return read_int_as(v, d.max_threads_per_sm);
    if (k == "warpSize") return read_int_as(v, d.warp_size);
    return skip_value(v);
  });
  --depth_;
  if (contains_amd(d.name)) store_.meta.is_rocm = true;
  store_.meta.devices.push_back(std::move(d));
  return p;
}

const char* Parser::parse_top_value(const char* p, std::string_view key) {
  TraceMeta& m = store_.meta;
  auto raw_text = [&](const char* v, std::string& out) {
    if (*v == '"') {
      std::string_view s;
      v = read_string(v, s);
      out.assign(s);
      return v;
    }
    const char* e = skip_value(v);
    out.assign(v, static_cast<size_t>(e - v));
    return e;
  };
  auto read_flag = [&](const char* v, bool& out) {
    if (*v == 't' || *v == 'f') {
      out = *v == 't';
      return skip_value(v);
    }
    int64_t x = 0;
    v = read_int(v, x);
    out = x != 0;
    return v;
  };
  if (key == "schemaVersion") return read_int_as(p, m.schema_version);
  if (key == "baseTimeNanoseconds") return read_int(p, m.base_time_ns);
  if (key == "record_shapes") return read_flag(p, m.record_shapes);
  if (key == "profile_memory") return read_flag(p, m.profile_memory);
  if (key == "cuda_runtime_version") return raw_text(p, m.cuda_runtime_version);
  if (key == "cuda_driver_version") return raw_text(p, m.cuda_driver_version);
  if (key == "cupti_version") return raw_text(p, m.cupti_version);
  if (key == "deviceProperties" && *p == '[') {
    // Parsed into a copy first: an item may be parsed twice after a refill.
    std::vector<DeviceProperties> saved = m.devices;
    bool rocm = m.is_rocm;
    try {
      return for_each_element(p, "deviceProperties", [&](const char* v) { return parse_device(v); });
    } catch (NeedMore&) {
      m.devices = std::move(saved);
      m.is_rocm = rocm;
      throw;
    }
  }
  if (key == "distributedInfo" && *p == '{') {
    DistributedInfo d;
    d.present = true;
    p = for_each_member(p, "distributedInfo", [&](std::string_view k, const char* v) -> const char* {
      if (k == "backend") return raw_text(v, d.backend);
      if (k == "rank") return read_int_as(v, d.rank);
      if (k == "world_size") return read_int_as(v, d.world_size);
      return skip_value(v);
    });
    m.distributed = std::move(d);
    return p;
  }
  return skip_value(p);
}


}  // namespace ts::trace::detail
