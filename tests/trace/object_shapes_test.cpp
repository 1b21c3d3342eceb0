// The layout trie on its own: what it learns, what it matches, and where it declines.
#include "trace/object_shapes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ts::trace::detail {
namespace {

using Step = ObjectShapes::Step;

// `text` with 64 zero bytes after it, as the readers keep.
std::string padded(const std::string& text) { return text + std::string(64, '\0'); }

TEST(ObjectShapes, MatchesALearntLayoutLiteralByLiteral) {
  ObjectShapes sh;
  const std::string t = padded(R"({"ph": "X", "ts": 5})");
  // Literals: `{"ph": ` -> field 1, `, "ts": ` -> field 2, `}` -> close.
  const Step steps[] = {{0, 7, 1}, {10, 18, 2}, {19, 20, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 3);
  uint16_t a = sh.match(ObjectShapes::kRoot, t.data());
  ASSERT_NE(a, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(a).field, 1);
  EXPECT_EQ(sh.node(a).len, 7);
  uint16_t b = sh.match(a, t.data() + 10);
  ASSERT_NE(b, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(b).field, 2);
  uint16_t c = sh.match(b, t.data() + 19);
  ASSERT_NE(c, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(c).field, ObjectShapes::kClose);
  // Another object of the same layout, other values.
  const std::string u = padded(R"({"ph": "B", "ts": 1234567})");
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, u.data()), a);
  EXPECT_EQ(sh.match(a, u.data() + 10), b);
  EXPECT_EQ(sh.match(b, u.data() + 25), c);
}

TEST(ObjectShapes, OtherTextDoesNotMatch) {
  ObjectShapes sh;
  const std::string t = padded(R"({"ph": "X"})");
  const Step steps[] = {{0, 7, 1}, {10, 11, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 2);
  for (const char* other : {R"({"ps": "X"})", R"({ "ph": "X"})", R"({"ph" : "X"})", R"({"p)"}) {
    SCOPED_TRACE(other);
    EXPECT_EQ(sh.match(ObjectShapes::kRoot, padded(other).data()), ObjectShapes::kNone);
  }
  // A literal never matches into the zero padding after the data.
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, padded(R"({"ph")").data()), ObjectShapes::kNone);
}

TEST(ObjectShapes, LayoutsShareTheirCommonStepsAndTheNewestIsTriedFirst) {
  ObjectShapes sh;
  const std::string x = padded(R"({"ph": "X", "cat": "k"})");
  const std::string s = padded(R"({"ph": "s", "id": 7})");
  const Step sx[] = {{0, 7, 1}, {10, 19, 4}, {22, 23, ObjectShapes::kClose}};
  const Step ss[] = {{0, 7, 1}, {10, 18, 3}, {19, 20, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, x.data(), sx, 3);
  sh.learn(ObjectShapes::kRoot, s.data(), ss, 3);
  uint16_t ph = sh.match(ObjectShapes::kRoot, x.data());
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, s.data()), ph);  // one shared first step
  uint16_t cat = sh.match(ph, x.data() + 10), id = sh.match(ph, s.data() + 10);
  ASSERT_NE(cat, ObjectShapes::kNone);
  ASSERT_NE(id, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(cat).field, 4);
  EXPECT_EQ(sh.node(id).field, 3);
  EXPECT_EQ(sh.node(ph).child, id);  // learnt last, tried first
  // Learning a layout again adds nothing.
  uint16_t before = sh.node(ph).child;
  sh.learn(ObjectShapes::kRoot, x.data(), sx, 3);
  EXPECT_EQ(sh.node(ph).child, before);
}

TEST(ObjectShapes, ALiteralBeforeAValueNeedsTheValueRightAfterIt) {
  ObjectShapes sh;
  const std::string t = padded(R"({"ts": 5})");
  const Step steps[] = {{0, 7, 2}, {8, 9, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 2);
  EXPECT_NE(sh.match(ObjectShapes::kRoot, t.data()), ObjectShapes::kNone);
  // `{"ts": ` is a prefix of `{"ts":  5}`, but the value does not start after it.
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, padded(R"({"ts":  5})").data()), ObjectShapes::kNone);
  // The layout with two blanks, once learnt, is the one that matches there.
  const std::string u = padded(R"({"ts":  5})");
  const Step two[] = {{0, 8, 2}, {9, 10, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, u.data(), two, 2);
  uint16_t c = sh.match(ObjectShapes::kRoot, u.data());
  ASSERT_NE(c, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(c).len, 8);
}

TEST(ObjectShapes, AtMostEightAlternativesPerStep) {
  ObjectShapes sh;
  std::vector<std::string> texts;
  for (int i = 0; i < 16; ++i) texts.push_back(padded("{\"k" + std::to_string(i) + "\": 1}"));
  for (const std::string& t : texts) {
    const Step steps[] = {{0, 7, 1}, {8, 9, ObjectShapes::kClose}};  // `{"kN": ` is 7 bytes for N < 10
    if (t[4] == '"') sh.learn(ObjectShapes::kRoot, t.data(), steps, 2);
    else {
      const Step longer[] = {{0, 8, 1}, {9, 10, ObjectShapes::kClose}};
      sh.learn(ObjectShapes::kRoot, t.data(), longer, 2);
    }
  }
  size_t matched = 0;
  for (const std::string& t : texts) matched += sh.match(ObjectShapes::kRoot, t.data()) != ObjectShapes::kNone;
  EXPECT_EQ(matched, ObjectShapes::kMaxAlternatives);
}

TEST(ObjectShapes, GivenUpWhereMostObjectsNeedReadingMemberByMember) {
  ObjectShapes sh;
  for (int i = 0; i < 4096; ++i) sh.tally(i % 4 == 0);  // a quarter by members: kept
  EXPECT_TRUE(sh.in_use());
  for (int i = 0; i < 4096; ++i) sh.tally(i % 4 != 0);  // three quarters: given up
  EXPECT_FALSE(sh.in_use());
}

TEST(ObjectShapes, LongLiteralsUpTo64BytesAndNoLonger) {
  ObjectShapes sh;
  const std::string key60 = "{" + std::string(53, ' ') + "\"ph\": ";  // 60 bytes
  const std::string t = padded(key60 + "1}");
  const Step steps[] = {{0, 60, 1}, {61, 62, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 2);
  uint16_t a = sh.match(ObjectShapes::kRoot, t.data());
  ASSERT_NE(a, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(a).len, 60);
  // One byte changed past the first 32, or past the first 48, still tells them apart.
  for (size_t at : {35u, 50u}) {
    std::string u = t;
    u[at] = 'x';
    EXPECT_EQ(sh.match(ObjectShapes::kRoot, u.data()), ObjectShapes::kNone) << at;
  }
  // A 70-byte literal is not learnt (and neither is the rest of its layout).
  ObjectShapes sh2;
  const std::string key70 = "{" + std::string(63, ' ') + "\"ph\": ";
  const std::string v = padded(key70 + "1}");
  const Step long_steps[] = {{0, 70, 1}, {71, 72, ObjectShapes::kClose}};
  sh2.learn(ObjectShapes::kRoot, v.data(), long_steps, 2);
  EXPECT_EQ(sh2.match(ObjectShapes::kRoot, v.data()), ObjectShapes::kNone);
}

// Constant values (code >= 0) join the literal after them, with presets naming what they were.
TEST(ObjectShapes, ConstantsJoinTheNextLiteral) {
  ObjectShapes sh;
  const std::string t = padded(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 5})");
  // `{"ph": ` ph="X" (code 0), `, "cat": ` cat="kernel" (code 7), `, "name": ` -> field 8, ...
  Step steps[] = {{0, 7, 1}, {10, 19, 4}, {27, 37, 8}, {40, 48, 2}, {49, 50, ObjectShapes::kClose}};
  steps[0].code = 0, steps[0].value_end = 10;
  steps[1].code = 7, steps[1].value_end = 27;
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 5);
  const uint16_t a = sh.match(ObjectShapes::kRoot, t.data());
  ASSERT_NE(a, ObjectShapes::kNone);
  const auto& n = sh.node(a);
  EXPECT_EQ(std::string(n.lit, n.len), R"({"ph": "X", "cat": "kernel", "name": )");
  EXPECT_EQ(n.field, 8);
  ASSERT_EQ(n.presets, 2);
  EXPECT_EQ(n.preset_field[0], 1);
  EXPECT_EQ(n.preset_code[0], 0);
  EXPECT_EQ(n.preset_field[1], 4);
  EXPECT_EQ(n.preset_code[1], 7);
  // Another category is another literal: it does not match this one.
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, padded(R"({"ph": "X", "cat": "cpu_op", "name": "k", "ts": 5})").data()),
            ObjectShapes::kNone);
  EXPECT_NE(sh.match(a, t.data() + 40), ObjectShapes::kNone);
}

// A path that ends with a constant (an object skipped after it) ends with a kNoValue literal.
TEST(ObjectShapes, AConstantLastEndsThePathWithItsValue) {
  ObjectShapes sh;
  const std::string t = padded(R"({"ph": "f", "id": 3})");
  Step steps[] = {{0, 7, 1}};
  steps[0].code = 9, steps[0].value_end = 10;
  sh.learn(ObjectShapes::kRoot, t.data(), steps, 1);
  const uint16_t a = sh.match(ObjectShapes::kRoot, t.data());
  ASSERT_NE(a, ObjectShapes::kNone);
  EXPECT_EQ(std::string(sh.node(a).lit, sh.node(a).len), R"({"ph": "f")");
  EXPECT_EQ(sh.node(a).field, ObjectShapes::kNoValue);
  EXPECT_EQ(sh.node(a).presets, 1);
  // Its value may be followed by blanks (no value starts after this literal).
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, padded("{\"ph\": \"f\" , \"id\": 3}").data()), a);
}

// A literal that another one extends never goes ahead of it, learnt later or matched more often:
// the shorter one would take every object the longer one reads with fewer steps.
TEST(ObjectShapes, AShorterLiteralStaysBehindTheLongerOneItStarts) {
  ObjectShapes sh;
  const std::string x = padded(R"({"ph": "X", "ts": 5})");
  Step merged[] = {{0, 7, 1}, {10, 18, 2}, {19, 20, ObjectShapes::kClose}};
  merged[0].code = 0, merged[0].value_end = 10;
  sh.learn(ObjectShapes::kRoot, x.data(), merged, 3);
  const Step plain[] = {{0, 7, 1}, {10, 18, 2}, {19, 20, ObjectShapes::kClose}};
  sh.learn(ObjectShapes::kRoot, x.data(), plain, 3);  // learnt last, but behind
  const uint16_t m = sh.match(ObjectShapes::kRoot, x.data());
  ASSERT_NE(m, ObjectShapes::kNone);
  EXPECT_EQ(sh.node(m).presets, 1);
  // Objects only the plain literal reads, again and again: it does not pass the longer one.
  const std::string b = padded(R"({"ph": "B", "ts": 5})");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sh.node(sh.match(ObjectShapes::kRoot, b.data())).presets, 0);
  EXPECT_EQ(sh.match(ObjectShapes::kRoot, x.data()), m);
}

}  // namespace
}  // namespace ts::trace::detail
