#pragma once
// A small streaming JSON writer: every --json output and report.json goes through it, so
// escaping and number formatting (no NaN/Inf, which JSON cannot hold) live in one place.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

class JsonWriter {
 public:
  explicit JsonWriter(bool pretty = true) : pretty_(pretty) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(double v);  // NaN/Inf become null
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& null();
  // Inserts already-serialised JSON as a value.
  JsonWriter& raw(std::string_view json);

  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // A whole array of scalars (numbers, strings, bools) from any range: the one loop every
  // `key(k).begin_array(); for (x : v) value(x); end_array();` used to spell out by hand.
  template <class Range>
  JsonWriter& value_array(const Range& r) {
    begin_array();
    for (const auto& x : r) value(x);
    return end_array();
  }
  JsonWriter& value_array(std::initializer_list<std::string_view> r) {
    begin_array();
    for (auto x : r) value(x);
    return end_array();
  }
  template <class Range>
  JsonWriter& array(std::string_view k, const Range& r) {
    key(k);
    return value_array(r);
  }
  JsonWriter& array(std::string_view k, std::initializer_list<std::string_view> r) {
    key(k);
    return value_array(r);
  }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

  static void escape_to(std::string& out, std::string_view s);

 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // one per open container: no element written yet
  bool pretty_;
  bool after_key_ = false;
};

}  // namespace ts
