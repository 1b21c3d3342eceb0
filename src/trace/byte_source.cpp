#include "trace/byte_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <isa-l/igzip_lib.h>

#include "trace/shrink_guard.h"
#include "trace/written_whole.h"
#include "util/error.h"

namespace ts::trace {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  ~FileSource() override {
    guard_.reset();
    if (map_) ::munmap(map_, map_len_);
    ::close(fd_);
  }
  std::string_view map_whole() override {
    // Only regular files of known size; the mapping is sized when opened (a file that grows
    // meanwhile is read up to that size).
    if (size_ == 0 || map_ || size_ > (uint64_t(1) << 46)) return {};
    size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_t len = (static_cast<size_t>(size_) + page - 1) / page * page + page;  // + one zero page
    // Private and writable only so the zero padding after the data can be written: that
    // copies the last page (copy-on-write), so even a file that grows while we read keeps
    // its sentinel. A file truncated meanwhile would fault (SIGBUS) past its new end: the
    // ShrinkGuard turns that into zeros and check_intact() into a UserError.
    void* region = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return {};
    void* m = ::mmap(region, static_cast<size_t>(size_), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd_, 0);
    if (m == MAP_FAILED) {
      ::munmap(region, len);
      return {};
    }
    ::madvise(m, static_cast<size_t>(size_), MADV_SEQUENTIAL);
    map_ = static_cast<char*>(m);
    map_len_ = len;
    guard_ = std::make_unique<ShrinkGuard>(map_, len);  // before the first touch (the memset)
    std::memset(map_ + size_, 0, 64);  // within the last file page and/or the zero page after it
    released_ = map_;
    return {map_, static_cast<size_t>(size_)};
  }
  void release_before(const char* upto) override {
    if (!map_) return;
    size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    char* cut = map_ + static_cast<size_t>(upto - map_) / page * page;
    if (cut > released_) {
      ::madvise(released_, static_cast<size_t>(cut - released_), MADV_DONTNEED);
      released_ = cut;
    }
    consumed_ = static_cast<uint64_t>(upto - map_);
  }
  // Bytes already taken from a pipe to sniff the gzip magic, served before the rest.
  void unread(const char* data, size_t n) { pending_.assign(data, n); }
  size_t read(char* dst, size_t cap) override {
    if (!pending_.empty() && cap > 0) {
      size_t n = std::min(cap, pending_.size());
      std::memcpy(dst, pending_.data(), n);
      pending_.erase(0, n);
      return n;
    }
    for (;;) {
      ssize_t n = ::read(fd_, dst, cap);
      if (n >= 0) {
        consumed_ += static_cast<uint64_t>(n);
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      throw UserError(path_ + ": byte " + std::to_string(consumed_) + ": read failed: " + std::strerror(errno));
    }
  }
  uint64_t raw_consumed() const override { return consumed_; }
  uint64_t raw_size() const override { return size_; }
  const std::string& path() const { return path_; }
  std::shared_ptr<void> guard_thread() override {
    if (!map_) return nullptr;
    struct WorkerGuard {
      ShrinkGuard guard;
      std::atomic<bool>* faulted;
      WorkerGuard(char* b, size_t n, std::atomic<bool>* f) : guard(b, n), faulted(f) {}
      ~WorkerGuard() {
        if (guard.faulted()) faulted->store(true);
      }
    };
    return std::make_shared<WorkerGuard>(map_, map_len_, &worker_faulted_);
  }
  void check_intact() const override {
    if (size_ == 0) return;  // not a regular file, or an empty one: nothing to shrink
    struct stat sb {};
    if (::fstat(fd_, &sb) != 0) return;
    uint64_t now = static_cast<uint64_t>(sb.st_size);
    if ((guard_ && guard_->faulted()) || worker_faulted_.load() || now < size_)
      throw UserError(path_ + ": the file shrank while being read (was " + std::to_string(size_) + " bytes, now " +
                      std::to_string(now) + ")");
  }

 private:
  int fd_;
  std::string path_;
  uint64_t size_;
  uint64_t consumed_ = 0;
  std::string pending_;
  char* map_ = nullptr;
  char* released_ = nullptr;
  size_t map_len_ = 0;
  std::unique_ptr<ShrinkGuard> guard_;  // while mapped: a truncation becomes zeros, not SIGBUS
  std::atomic<bool> worker_faulted_{false};  // a worker thread's guard absorbed a fault
};

// Inflates with ISA-L (about 10x zlib). Handles multi-member gzip (concatenated .gz files);
// zero padding after the last member is tolerated, any other trailing bytes are an error.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<FileSource> file) : file_(std::move(file)), in_(kInChunk) {
    isal_inflate_init(&st_);
    st_.crc_flag = ISAL_GZIP;
  }
  size_t read(char* dst, size_t cap) override {
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    size_t produced = 0;
    while (produced < cap && !done_) {
      if (st_.avail_in == 0 && !file_eof_) fill();
      if (member_done_) {
        // Between members: zero padding may end the file; anything else must be another member.
        while (st_.avail_in > 0 && *st_.next_in == 0) {
          ++st_.next_in;
          --st_.avail_in;
          saw_padding_ = true;
        }
        if (st_.avail_in == 0) {
          if (file_eof_) { done_ = true; break; }
          continue;
        }
        if (saw_padding_) fail("expected only zero padding after the last gzip member");
        if (*st_.next_in != 0x1f) fail("expected end of file or another gzip member after the gzip trailer");
        isal_inflate_reset(&st_);
        st_.crc_flag = ISAL_GZIP;
        member_done_ = false;
      }
      st_.next_out = reinterpret_cast<uint8_t*>(dst + produced);
      st_.avail_out = static_cast<uint32_t>(cap - produced);
      int rc = isal_inflate(&st_);
      produced = reinterpret_cast<char*>(st_.next_out) - dst;
      if (rc < 0) fail(describe(rc));
      if (st_.block_state == ISAL_BLOCK_FINISH) {
        member_done_ = true;
        continue;
      }
      if (st_.avail_in == 0 && file_eof_ && st_.avail_out > 0)
        fail("expected more gzip data: the compressed file is truncated", true);
    }
    total_out_ += produced;
    return produced;
  }
  uint64_t raw_consumed() const override { return file_->raw_consumed() - st_.avail_in; }
  uint64_t raw_size() const override { return file_->raw_size(); }
  bool compressed() const override { return true; }
  void check_intact() const override { file_->check_intact(); }

 private:
  static constexpr size_t kInChunk = 1 << 20;
  void fill() {
    size_t n = file_->read(reinterpret_cast<char*>(in_.data()), in_.size());
    if (n == 0) file_eof_ = true;
    st_.next_in = in_.data();
    st_.avail_in = static_cast<uint32_t>(n);
  }
  static const char* describe(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "expected a valid deflate block (corrupt gzip data)";
      case ISAL_INVALID_SYMBOL: return "expected a valid deflate symbol (corrupt gzip data)";
      case ISAL_INVALID_LOOKBACK: return "expected a valid back-reference (corrupt gzip data)";
      case ISAL_INVALID_WRAPPER: return "expected a valid gzip header";
      case ISAL_UNSUPPORTED_METHOD: return "expected deflate compression in the gzip header";
      case ISAL_INCORRECT_CHECKSUM: return "expected a matching gzip checksum (corrupt gzip data)";
      default: return "expected valid gzip data";
    }
  }
  [[noreturn]] void fail(const char* what, bool cut_off = false) {
    const std::string msg = file_->path() + ": byte " + std::to_string(raw_consumed()) + " of the gzip file: " + what;
    if (cut_off) throw CutOffError(msg);
    throw UserError(msg);
  }

  std::unique_ptr<FileSource> file_;
  std::vector<uint8_t> in_;
  inflate_state st_{};
  bool file_eof_ = false, member_done_ = false, done_ = false, saw_padding_ = false;
  uint64_t total_out_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view d) : data_(d) {}
  size_t read(char* dst, size_t cap) override {
    size_t n = std::min(cap, data_.size() - pos_);
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t raw_consumed() const override { return pos_; }
  uint64_t raw_size() const override { return data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path, int pipe_wait_ms) {
  // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait forever; we wait
  // for its first bytes below, bounded. Reads block again after that.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UserError(path + ": cannot open: " + std::strerror(errno));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    int e = errno;
    ::close(fd);
    throw UserError(path + ": cannot stat: " + std::strerror(e));
  }
  if (S_ISDIR(sb.st_mode)) {
    ::close(fd);
    throw UserError(path + ": is a directory, expected a trace file (.json or .json.gz)");
  }
  if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode)) {
    // /dev/zero or /dev/urandom would be read forever; sockets and terminals are no traces.
    ::close(fd);
    const char* kind = S_ISCHR(sb.st_mode) ? "a character device" : S_ISBLK(sb.st_mode) ? "a block device"
                       : S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
    throw UserError(path + ": is " + std::string(kind) +
                    ", expected a trace file (.json or .json.gz) or a pipe");
  }
  if (S_ISFIFO(sb.st_mode)) {
    // A named pipe's writer may come a little after us (`mkfifo p; trainscope analyze p &
    // producer > p`), but not never: wait for data or its end, bounded.
    struct pollfd pfd {fd, POLLIN, 0};
    int r;
    do r = ::poll(&pfd, 1, pipe_wait_ms); while (r < 0 && errno == EINTR);
    if (r == 0) {
      ::close(fd);
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", pipe_wait_ms / 1000.0);
      throw UserError(path + ": nothing was written to the pipe within " + secs + " s (no writer?), expected a trace");
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto file = std::make_unique<FileSource>(fd, path, S_ISREG(sb.st_mode) ? sb.st_size : 0);
  // Peek at the magic: pread on files; on pipes (no pread) read it and hand it back.
  char magic[2] = {0, 0};
  size_t got = 0;
  if (S_ISREG(sb.st_mode)) {
    ssize_t n = ::pread(fd, magic, 2, 0);
    got = n > 0 ? static_cast<size_t>(n) : 0;
  } else {
    while (got < 2) {
      size_t n = file->read(magic + got, 2 - got);
      if (n == 0) break;
      got += n;
    }
    file->unread(magic, got);
  }
  if (got == 2 && static_cast<unsigned char>(magic[0]) == 0x1f && static_cast<unsigned char>(magic[1]) == 0x8b)
    return std::make_unique<GzipSource>(std::move(file));
  return file;
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view data) {
  return std::make_unique<MemorySource>(data);
}

}  // namespace ts::trace
