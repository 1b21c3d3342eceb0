#pragma once
// Where the reader's bytes come from: a plain file, a gzip file inflated on the fly, or memory.
// Each hands out the uncompressed JSON in pieces, so a trace is never held whole in memory.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ts::trace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `cap` bytes; returns 0 only at the end of the data. Throws ts::UserError on bad input.
  virtual size_t read(char* dst, size_t cap) = 0;
  // For progress: bytes taken from the underlying file so far, and its size (0 for memory).
  virtual uint64_t raw_consumed() const = 0;
  virtual uint64_t raw_size() const = 0;
  // True when the data is inflated from gzip (errors then give uncompressed offsets).
  virtual bool compressed() const { return false; }
  // A plain regular file may instead be mapped whole (read-only), with at least 64 zero bytes
  // readable after its end: parsing it in place saves the kernel's copy into a read() buffer.
  // Empty when not available (then use read()).
  virtual std::string_view map_whole() { return {}; }
  // The parser is done with the mapped bytes before `upto`: their pages may leave memory,
  // so the process's RSS stays near the size of the store, not of the file.
  virtual void release_before(const char* upto) {}
  // Throws ts::UserError("<file>: the file shrank while being read (was N bytes, now M)") when
  // the file was truncated under us; the reader calls it after the parse, and before passing
  // on a parse error (which a truncation causes).
  virtual void check_intact() const {}
  // For a worker thread of the parallel reader that reads the mapping: guards its reads against
  // a shrinking file as the opening thread's are (see shrink_guard.h) while the result lives;
  // check_intact() then also reports faults absorbed on that thread. Null when nothing is mapped.
  virtual std::shared_ptr<void> guard_thread() { return nullptr; }
};

// Opens `path` and detects gzip by its magic bytes (1f 8b), not by the extension.
// Throws ts::UserError for a missing file, a directory, a device or socket (only regular files
// and pipes are read), an unreadable one, or a pipe nobody writes to within `pipe_wait_ms`.
std::unique_ptr<ByteSource> open_byte_source(const std::string& path, int pipe_wait_ms = 30000);

// Serves bytes from memory (not copied; `data` must outlive the source).
std::unique_ptr<ByteSource> memory_byte_source(std::string_view data);

}  // namespace ts::trace
