#include <gtest/gtest.h>

#include <cmath>

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
