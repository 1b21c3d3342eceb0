#include "trace/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

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

uint64_t estimate_read_memory(const std::string& path) {
  constexpr uint64_t kFixed = 64u << 20;  // buffers, the inflated chunks, the analysis' own tables
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return kFixed;
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  uint64_t json = size;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
    if (::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      // ISIZE (the last 4 bytes) is the size mod 2^32 of the last member: trusted only when
      // plausible (a 4-100x ratio); otherwise the 16x the reader also assumes.
      json = size * 16;
      if (size >= 4 && ::pread(fd, trailer, 4, static_cast<off_t>(size - 4)) == 4) {
        const uint64_t isize = trailer[0] | trailer[1] << 8 | trailer[2] << 16 | uint64_t(trailer[3]) << 24;
        if (isize >= size * 4 && isize <= size * 100) json = isize;
      }
    }
    ::close(fd);
  }
  return json / 2 + kFixed;
}

EventStore parse_trace(std::string_view json, const std::string& origin, const ReadOptions& opt) {
  auto src = memory_byte_source(json);
  return detail::parse_source(*src, origin, opt);
}

}  // namespace ts::trace
