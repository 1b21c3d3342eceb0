// libFuzzer target for the trace reader. Any input must end in a store or a ts::UserError:
// never a crash, a sanitizer report, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/reader.h"
#include "trace/trace_parser.h"
#include "util/error.h"

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
  return 0;
}
