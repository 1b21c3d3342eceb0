#include "trace/string_pool.h"

#include <cstring>
#include <limits>

namespace ts::trace {

StringPool::StringPool() {
  views_.emplace_back();
  index_.emplace(std::string_view(), 0);
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

uint32_t StringPool::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  std::string_view owned = store(s);
  uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(owned);
  index_.emplace(owned, id);
  return id;
}

uint32_t StringPool::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? std::numeric_limits<uint32_t>::max() : it->second;
}

}  // namespace ts::trace
