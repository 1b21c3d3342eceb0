// StringPool: ids are stable, distinct strings get distinct ids at every length and wherever
// they differ (the hash reads a string's last partial word by overlapping loads), and no load
// strays past a string (exactly sized heap copies, checked under the sanitizers).
#include "trace/string_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ts::trace {
namespace {

std::unique_ptr<char[]> exact_copy(const std::string& s) {
  std::unique_ptr<char[]> p(new char[s.size() ? s.size() : 1]);
  std::memcpy(p.get(), s.data(), s.size());
  return p;
}

TEST(StringPool, DistinctStringsAtEveryLengthAndPositionGetDistinctIds) {
  StringPool pool;
  std::vector<std::string> all;
  for (size_t n = 1; n <= 70; ++n) {
    std::string base;
    for (size_t i = 0; i < n; ++i) base += static_cast<char>('a' + (i * 7) % 26);
    all.push_back(base);
    for (size_t i = 0; i < n; ++i) {
      std::string v = base;
      v[i] ^= 0x20;  // differs from base at i only
      all.push_back(v);
    }
  }
  std::vector<uint32_t> ids;
  for (const auto& s : all) {
    auto buf = exact_copy(s);
    ids.push_back(pool.intern(std::string_view(buf.get(), s.size())));
  }
  EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), all.size());
  EXPECT_EQ(pool.size(), all.size() + 1);  // and id 0, the empty string
  // Again, from other buffers: the same ids, in the same order; find() agrees.
  for (size_t k = 0; k < all.size(); ++k) {
    auto buf = exact_copy(all[k]);
    std::string_view v(buf.get(), all[k].size());
    EXPECT_EQ(pool.intern(v), ids[k]) << all[k];
    EXPECT_EQ(pool.find(v), ids[k]) << all[k];
    EXPECT_EQ(pool.view(ids[k]), all[k]);
  }
  EXPECT_EQ(pool.size(), all.size() + 1);
  EXPECT_EQ(pool.intern(""), 0u);
  EXPECT_EQ(pool.find("not interned"), UINT32_MAX);
}

TEST(StringPool, IdsFollowFirstUseAcrossIndexGrowth) {
  StringPool pool;
  // Past the first index size (1,024 slots, kept at most half full) several times over.
  for (uint32_t i = 1; i <= 5000; ++i) EXPECT_EQ(pool.intern("name_" + std::to_string(i)), i);
  for (uint32_t i = 1; i <= 5000; ++i) EXPECT_EQ(pool.find("name_" + std::to_string(i)), i);
}

}  // namespace
}  // namespace ts::trace
