// same_bytes() against memcmp at every length up to 70 and a difference at every position,
// on ranges at every offset of a buffer (so no load strays past either range unnoticed under
// the sanitizers).
#include "trace/same_bytes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace ts::trace {
namespace {

TEST(SameBytes, AgreesWithMemcmpAtEveryLengthAndPosition) {
  for (size_t n = 0; n <= 70; ++n) {
    for (size_t off = 0; off < 3; ++off) {
      // Exactly-sized heap copies: an over-read would show under AddressSanitizer.
      std::string text;
      for (size_t i = 0; i < n; ++i) text += static_cast<char>('a' + (i * 7 + off) % 26);
      std::unique_ptr<char[]> a(new char[n + 1]), b(new char[n + 1]);
      std::memcpy(a.get(), text.data(), n);
      std::memcpy(b.get(), text.data(), n);
      EXPECT_TRUE(same_bytes(a.get(), b.get(), n)) << "length " << n;
      for (size_t i = 0; i < n; ++i) {
        b[i] ^= 0x20;
        EXPECT_FALSE(same_bytes(a.get(), b.get(), n)) << "length " << n << ", differs at " << i;
        EXPECT_EQ(same_bytes(a.get(), b.get(), n), std::memcmp(a.get(), b.get(), n) == 0);
        b[i] ^= 0x20;
      }
    }
  }
}

}  // namespace
}  // namespace ts::trace
