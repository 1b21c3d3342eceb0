#pragma once
// Interned strings: each distinct string is stored once; events hold a 32-bit id.
// Id 0 is always the empty string. Views stay valid for the pool's lifetime (chunked arena).
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace ts::trace {

class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) noexcept = default;
  StringPool& operator=(StringPool&&) noexcept = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  uint32_t intern(std::string_view s);
  // Returns the id if present, or UINT32_MAX.
  uint32_t find(std::string_view s) const;
  std::string_view view(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  size_t bytes() const { return arena_bytes_; }

 private:
  std::string_view store(std::string_view s);
  void grow_index();
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0, chunk_cap_ = 0, arena_bytes_ = 0;
  std::vector<std::string_view> views_;
  // Open-addressing index (power-of-two size, at most half full): the reader interns every
  // event name, so this lookup is on its hot path. Slot id 0 = empty (the empty string is
  // answered without a lookup).
  struct Slot {
    uint32_t hash = 0;
    uint32_t id = 0;
  };
  std::vector<Slot> index_;
};

}  // namespace ts::trace
