// libFuzzer target for the trace reader. Any input must end in a store or a ts::UserError:
// never a crash, a sanitizer report, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/reader.h"
#include "trace/trace_parser.h"
#include "util/error.h"

namespace {

// A fingerprint of a store's rows and strings (FNV-1a over the columns).
std::string digest(const ts::trace::EventStore& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto col = [&](const auto& v) { mix(v.data(), v.size() * sizeof(v[0])); };
  col(s.name), col(s.cat), col(s.ph), col(s.ts_ns), col(s.dur_ns);
  for (size_t i = 0; i < s.size(); ++i) {  // each row's (pid, tid), not its index into the threads table
    const int64_t pt[2] = {s.pid(i), s.tid(i)};
    mix(pt, sizeof pt);
  }
  col(s.correlation), col(s.external_id), col(s.args), col(s.input_dims), col(s.input_types);
  for (uint32_t i = 0; i < s.strings.size(); ++i) mix(s.strings.view(i).data(), s.strings.view(i).size()), mix("", 1);
  for (const auto& a : s.args_table) mix(&a, sizeof a);
  return std::to_string(s.size()) + "+" + std::to_string(s.meta.flow_events) + ":" + std::to_string(h);
}

// Reading by learnt layouts (src/trace/object_shapes.h) against member by member.
std::string outcome(std::string_view in, bool layouts, bool keep_flows) {
  auto src = ts::trace::memory_byte_source(in);
  ts::trace::ReadOptions opt;
  opt.max_events = 100000;
  opt.learn_layouts = layouts;
  opt.keep_flows = keep_flows;
  try {
    return digest(ts::trace::detail::parse_source(*src, "fuzz", opt, in.size() + 1));
  } catch (const ts::UserError& e) {
    return e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  try {
    ts::trace::parse_trace(in, "fuzz");
  } catch (const ts::UserError&) {
  }
  // The same bytes through a small window, so every item crosses refills; the first byte
  // picks the window size.
  if (size > 0) {
    size_t window = 16 + data[0] % 64;
    auto src = ts::trace::memory_byte_source(in.substr(1));
    try {
      ts::trace::ReadOptions opt;
      opt.max_events = 100000;
      ts::trace::detail::parse_source(*src, "fuzz", opt, window);
    } catch (const ts::UserError&) {
    }
  }
  // Both ways of reading an object must give the same store, or the same error (flow events
  // stored or only counted, as the first byte says).
  const bool keep_flows = size > 0 && (data[0] & 0x80);
  if (outcome(in, true, keep_flows) != outcome(in, false, keep_flows)) __builtin_trap();
  return 0;
}
