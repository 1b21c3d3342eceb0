#include "trace/reader.h"

#include "trace/byte_source.h"
#include "trace/trace_parser.h"

namespace ts::trace {

EventStore read_trace(const std::string& path, const ReadOptions& opt) {
  auto src = open_byte_source(path);
  return detail::parse_source(*src, path, opt);
}

EventStore parse_trace(std::string_view json, const std::string& origin) {
  auto src = memory_byte_source(json);
  return detail::parse_source(*src, origin, ReadOptions{});
}

}  // namespace ts::trace
