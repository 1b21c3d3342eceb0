#include "trace/reader.h"

#include "trace/byte_source.h"
#include "trace/trace_parser.h"
#include "util/error.h"

namespace ts::trace {

EventStore read_trace(const std::string& path, const ReadOptions& opt) {
  auto src = open_byte_source(path, opt.pipe_wait_ms);
  try {
    EventStore store = detail::parse_source(*src, path, opt);
    src->check_intact();
    return store;
  } catch (const UserError&) {
    src->check_intact();  // a truncation explains the parse error better than the error itself
    throw;
  }
}

EventStore parse_trace(std::string_view json, const std::string& origin) {
  auto src = memory_byte_source(json);
  return detail::parse_source(*src, origin, ReadOptions{});
}

}  // namespace ts::trace
