#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/json_writer.h"

TEST(JsonWriter, NestedCompact) {
  ts::JsonWriter w(false);
  w.begin_object().field("a", 1).key("b").begin_array().value("x\"y").value(2.5).null().end_array();
  w.field("c", true).end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":["x\"y",2.5,null],"c":true})");
}

TEST(JsonWriter, NonFiniteIsNull) {
  ts::JsonWriter w(false);
  w.begin_array().value(std::nan("")).value(INFINITY).end_array();
  EXPECT_EQ(w.str(), "[null,null]");
}

TEST(JsonWriter, ControlCharactersEscaped) {
  ts::JsonWriter w(false);
  w.value(std::string_view("a\n\x01", 3));
  EXPECT_EQ(w.str(), R"("a\n\u0001")");
}

TEST(JsonWriter, ArrayHelpersWriteScalarRanges) {
  ts::JsonWriter w(false);
  std::vector<double> d{1.5, std::nan(""), -2};
  std::vector<int64_t> i{3, -4};
  std::vector<uint64_t> u{18446744073709551615ull};
  std::vector<std::string> s{"a\"b", ""};
  std::vector<bool> b{true, false};
  w.begin_object().array("d", d).array("i", i).array("u", u).array("s", s).array("b", b);
  w.array("lit", {"x", "y"}).array("none", std::vector<double>{}).end_object();
  EXPECT_EQ(w.str(),
            R"({"d":[1.5,null,-2],"i":[3,-4],"u":[18446744073709551615],"s":["a\"b",""],"b":[true,false],)"
            R"("lit":["x","y"],"none":[]})");
}

TEST(JsonWriter, ValueArrayNestsAndPretty) {
  ts::JsonWriter w(true);
  std::vector<int> a{1, 2};
  w.begin_array().value_array(a).value_array(std::vector<int>{}).end_array();
  EXPECT_EQ(w.str(), "[\n  [\n    1,\n    2\n  ],\n  []\n]");
}

// Doubles read back exactly: a Unix time keeps its milliseconds, short values stay short.
TEST(JsonWriter, DoublesRoundTripInShortestForm) {
  ts::JsonWriter w(false);
  w.begin_array().value(1795330000.123).value(0.1).value(2.5).value(-3.0).value(1e20).value(100.0 / 3).end_array();
  EXPECT_EQ(w.str(), "[1795330000.123,0.1,2.5,-3,1e+20,33.333333333333336]");
  std::string s = w.str();
  EXPECT_EQ(std::strtod(s.c_str() + s.rfind(',') + 1, nullptr), 100.0 / 3);
}
