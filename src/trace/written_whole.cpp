#include "trace/written_whole.h"

#include <cstdint>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <vector>

#include "trace/byte_source.h"
#include "trace/json_scan.h"

namespace ts::trace {

namespace {
// What the depth count needs to see outside strings: brackets, quotes and blanks.
enum : uint8_t { kPlain = 0, kOpen, kClose, kQuote, kBlank };
struct Classes {
  uint8_t of[256] = {};
  constexpr Classes() {
    of[static_cast<unsigned char>('{')] = of[static_cast<unsigned char>('[')] = kOpen;
    of[static_cast<unsigned char>('}')] = of[static_cast<unsigned char>(']')] = kClose;
    of[static_cast<unsigned char>('"')] = kQuote;
    for (char c : {' ', '\n', '\r', '\t'}) of[static_cast<unsigned char>(c)] = kBlank;
  }
};
constexpr Classes kClass{};

struct DepthScan {
  int64_t depth = 0;
  bool in_string = false, started = false, closed = false;
  size_t backslashes = 0;  // the run of '\\' that ended the previous piece, inside a string

  // The next piece of the file (a mapped file is one piece).
  void feed(const char* begin, size_t n) {
    const char* p = begin;
    const char* const end = begin + n;
    while (p < end && !closed) {
#if defined(__SSE2__)
      // 64 bytes at once when no backslash can escape a quote in them (nor a NUL stand there)
      // and the count cannot reach the top level's close: strings are then the bytes after an
      // odd number of quotes.
      if (started && end - p >= 64 && (p != begin || backslashes == 0)) {
        const detail::BlockBits b = detail::block_bits(p);
        if (b.stop == 0) {
          const uint64_t inside = detail::prefix_xor(b.quote) ^ (in_string ? ~uint64_t(0) : 0);
          const int closes = __builtin_popcountll(b.close & ~inside);
          if (closes < depth) {
            depth += __builtin_popcountll(b.open & ~inside) - closes;
            in_string = (inside >> 63) != 0;
            p += 64;
            continue;
          }
        }
      }
#endif
      p = scalar(begin, p, std::min(end, p + 64), end);
    }
  }

  // Byte by byte over [p, stop) (whole strings by memchr, possibly past `stop`); `begin` is
  // where the piece starts (backslash runs are counted back to it), `end` where it ends.
  const char* scalar(const char* begin, const char* p, const char* stop, const char* end) {
    while (p < stop && !closed) {
      if (in_string) {
        const char* q = static_cast<const char*>(std::memchr(p, '"', static_cast<size_t>(end - p)));
        if (!q) {
          const char* b = end;
          while (b > p && b[-1] == '\\') --b;
          backslashes = (b == begin ? backslashes : 0) + static_cast<size_t>(end - b);
          return end;
        }
        // A string ends at a quote after an even run of backslashes.
        const char* b = q;
        while (b > begin && b[-1] == '\\') --b;
        const size_t run = static_cast<size_t>(q - b) + (b == begin ? backslashes : 0);
        backslashes = 0;
        if (run % 2 == 0) in_string = false;
        p = q + 1;
        continue;
      }
      const uint8_t c = kClass.of[static_cast<unsigned char>(*p++)];
      if (c == kBlank || (c == kPlain && started)) continue;
      if (!started && c != kOpen) {
        closed = true;  // a scalar or garbage at the top: not ours to judge
      } else if (c == kQuote) {
        in_string = true;
      } else if (c == kOpen) {
        started = true;
        ++depth;
      } else if (c == kClose && --depth <= 0) {
        closed = true;  // the top level closed (or closed more than it opened)
      }
    }
    return p;
  }
};
}  // namespace

bool json_cut_off(const std::string& path) {
  if (std::filesystem::path(path).extension() != ".json") return false;
  auto src = open_byte_source(path);
  DepthScan scan;
  if (std::string_view whole = src->map_whole(); !whole.empty()) {
    scan.feed(whole.data(), whole.size());
    src->check_intact();
  } else {
    std::vector<char> buf(1 << 20);
    while (!scan.closed)
      if (size_t n = src->read(buf.data(), buf.size()); n > 0) scan.feed(buf.data(), n);
      else break;
  }
  return !scan.closed;
}

}  // namespace ts::trace
