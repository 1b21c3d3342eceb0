#include "trace/string_pool.h"

#include <cstring>
#include <limits>

#include "trace/json_scan.h"
#include "trace/same_bytes.h"

namespace ts::trace {
namespace {

using detail::load8;
using detail::load_short;

// A fast 64-bit hash over 8-byte words (multiply-xorshift mixing); quality is ample for a
// table whose keys come from one trace, and it runs at several bytes per cycle.
// The last partial word is read by overlapping loads, never assembled byte by byte in memory:
// a word loaded from bytes just stored one at a time cannot be forwarded from the store buffer
// and stalled every lookup (a quarter of this function's samples).
inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);  // the length seeds it
  const char* end = p + n;
  if (n < 8) {
    if (n) h = (h ^ load_short(p, n)) * 0x94d049bb133111ebull;
  } else {
    while (n >= 16) {
      uint64_t a = load8(p), b = load8(p + 8);
      h = (h ^ a) * 0xbf58476d1ce4e5b9ull + (b ^ (h >> 31)) * 0x94d049bb133111ebull;
      p += 16;
      n -= 16;
    }
    if (n >= 8) {
      h = (h ^ load8(p)) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 29;
      n -= 8;
    }
    if (n) h = (h ^ load8(end - 8)) * 0x94d049bb133111ebull;  // overlaps bytes already mixed
  }
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

}  // namespace

StringPool::StringPool() {
  views_.emplace_back();
  index_.resize(1024);
}

std::string_view StringPool::store(std::string_view s) {
  if (s.size() > chunk_cap_ - chunk_used_) {
    size_t cap = std::max<size_t>(s.size(), 1 << 20);
    chunks_.emplace_back(new char[cap]);
    chunk_used_ = 0;
    chunk_cap_ = cap;
  }
  char* dst = chunks_.back().get() + chunk_used_;
  std::memcpy(dst, s.data(), s.size());
  chunk_used_ += s.size();
  arena_bytes_ += s.size();
  return {dst, s.size()};
}

void StringPool::grow_index() {
  std::vector<Slot> bigger(index_.size() * 2);
  size_t mask = bigger.size() - 1;
  for (const Slot& sl : index_) {
    if (sl.id == 0) continue;
    size_t i = sl.hash & mask;
    while (bigger[i].id != 0) i = (i + 1) & mask;
    bigger[i] = sl;
  }
  index_ = std::move(bigger);
}

uint32_t StringPool::intern(std::string_view s) {
  if (s.empty()) return 0;
  uint32_t h = static_cast<uint32_t>(hash_bytes(s.data(), s.size()));
  size_t mask = index_.size() - 1;
  size_t i = h & mask;
  for (;;) {
    const Slot& sl = index_[i];
    if (sl.id == 0) break;
    if (sl.hash == h) {
      std::string_view v = views_[sl.id];
      if (v.size() == s.size() && same_bytes(v.data(), s.data(), s.size())) return sl.id;
    }
    i = (i + 1) & mask;
  }
  uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(store(s));
  index_[i] = Slot{h, id};
  if (views_.size() * 2 > index_.size()) grow_index();
  return id;
}

uint32_t StringPool::find(std::string_view s) const {
  if (s.empty()) return 0;
  uint32_t h = static_cast<uint32_t>(hash_bytes(s.data(), s.size()));
  size_t mask = index_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& sl = index_[i];
    if (sl.id == 0) return std::numeric_limits<uint32_t>::max();
    if (sl.hash == h) {
      std::string_view v = views_[sl.id];
      if (v.size() == s.size() && same_bytes(v.data(), s.data(), s.size())) return sl.id;
    }
  }
}

}  // namespace ts::trace
