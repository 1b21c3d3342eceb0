// find_plain_close() (json_scan.h) against a byte-by-byte reference of the bracket-matching
// skip the parser falls back on: wherever the 64-byte scan answers, it must name the same '}'.
#include "trace/json_scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ts::trace {
namespace {

using detail::find_plain_close;

// Inside one open object: the offset of the '}' closing it, or -1 where the skip would fail
// (a bracket that does not match, a NUL outside strings) or reach the end first. Strings run to
// the next quote not escaped by a backslash; other bytes are not looked at.
long reference_close(const std::string& s) {
  std::vector<char> stack{'}'};
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i)
        if (s[i] == '\\') ++i;
      if (i >= s.size()) return -1;
    } else if (c == '{' || c == '[') {
      stack.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (c != stack.back()) return -1;
      stack.pop_back();
      if (stack.empty()) return static_cast<long>(i);
    } else if (c == '\0') {
      return -1;
    }
  }
  return -1;
}

// The scan on an exactly sized heap copy: a read past `end` would show under AddressSanitizer.
long scanned_close(const std::string& s) {
  std::unique_ptr<char[]> buf(new char[s.size()]);
  std::copy(s.begin(), s.end(), buf.get());
  const char* r = find_plain_close(buf.get(), buf.get() + s.size());
  return r ? static_cast<long>(r - buf.get()) : -2;
}

TEST(JsonScan, PlainCloseAgreesWithBracketMatching) {
  // Mostly text and quotes, so that many strings open and close across the 64-byte blocks, with
  // now and then a bracket, a backslash or a NUL, inside strings or out.
  const std::string common = "aaaaaaaa , : 0123 \"\"\"\"";
  const std::string rare = "{}[]\\\0";
  std::mt19937 rng(12345);
  size_t answered = 0, closes_inside_strings = 0;
  for (int round = 0; round < 20000; ++round) {
    const size_t n = 64 + rng() % 260;
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      const bool rare_byte = rng() % 40 == 0;
      s += rare_byte ? rare[rng() % 6] : common[rng() % common.size()];
    }
    const long want = reference_close(s);
    const long got = scanned_close(s);
    if (got == -2) continue;  // not answered: the parser takes the byte-by-byte skip
    ++answered;
    ASSERT_EQ(got, want) << "round " << round << ": " << s;
    for (long i = 0; i < got; ++i) closes_inside_strings += s[i] == '}';
  }
  // The test means something only if the scan answered often, past '}' inside strings.
  EXPECT_GT(answered, 2000u);
  EXPECT_GT(closes_inside_strings, 100u);
}

TEST(JsonScan, PlainCloseFindsAFlowEventsEnd) {
  // The rest of a Kineto flow event after its "ph" value, then the next event.
  const std::string rest =
      ", \"id\": 135071, \"pid\": 0, \"tid\": 7, \"ts\": 1712195495505582.988,\n"
      "    \"cat\": \"ac2g\", \"name\": \"a}c{2g]\", \"bp\": \"e\"\n  },\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\"";
  EXPECT_EQ(scanned_close(rest), static_cast<long>(rest.find("\n  },") + 3));
  EXPECT_EQ(scanned_close(rest), reference_close(rest));
}

TEST(JsonScan, PlainCloseLeavesHardCasesToTheByteSkip) {
  const std::string pad(70, ' ');
  EXPECT_EQ(scanned_close(", \"args\": {\"a\": 1}" + pad + "}"), -2);     // an object inside
  EXPECT_EQ(scanned_close(", \"a\": [1, 2]" + pad + "}"), -2);            // an array inside
  EXPECT_EQ(scanned_close(", \"a\": \"\\\"}\"" + pad + "}"), -2);         // an escaped quote
  EXPECT_EQ(scanned_close(", \"a\": 1]" + pad + "}"), -2);                // a wrong bracket
  EXPECT_EQ(scanned_close(std::string(", \"a\": 1\0", 9) + pad + "}"), -2);  // a NUL
  EXPECT_EQ(scanned_close(", \"a\": 1}"), -2);                            // under 64 bytes left
  // The same with the '}' first: answered.
  EXPECT_EQ(scanned_close(", \"a\": 1}" + pad + "{[\\"), 8);
}

}  // namespace
}  // namespace ts::trace
