// Objects in a layout seen before are read literal by literal (src/trace/object_shapes.h). That
// must read exactly what reading every member by its key reads: the same store on every fixture,
// and on text built to part from a learnt layout at every kind of place (more or fewer blanks,
// another key, a key written with an escape, a repeated key, a longer literal than is learnt,
// a bad value, a NUL byte, a cut anywhere), the same store or the same one-line error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/trace_test_util.h"
#include "util/error.h"

namespace ts::trace {
namespace {

using test::data_path;
using test::expect_identical;

ReadOptions with_layouts(bool on, int threads = 1) {
  ReadOptions o;
  o.learn_layouts = on;
  o.threads = threads;
  if (threads > 1) {  // small chunks, so even the small fixtures are cut
    o.parallel_min_bytes = 0;
    o.chunk_bytes = 64 << 10;
    o.chunk_overlap = 8 << 10;
  }
  return o;
}

std::string outcome(const std::string& path, const ReadOptions& opt, EventStore* out = nullptr) {
  try {
    EventStore s = read_trace(path, opt);
    if (out) *out = std::move(s);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(read)";
}

// Reads `json` both ways (serially) and expects the same store, or the same error.
void expect_same_both_ways(const std::string& name, const std::string& json) {
  SCOPED_TRACE(name);
  const std::string path = test::temp_dir() + "/" + name + ".json";
  test::write_file(path, json);
  EventStore by_key, by_layout;
  const std::string a = outcome(path, with_layouts(false), &by_key);
  const std::string b = outcome(path, with_layouts(true), &by_layout);
  ASSERT_EQ(a, b);
  if (a == "(read)") expect_identical(by_key, by_layout);
}

TEST(TraceLayouts, EveryFixtureReadsAsMemberByMember) {
  for (const char* f : test::kFixtures) {
    SCOPED_TRACE(f);
    const EventStore by_key = read_trace(data_path(f), with_layouts(false));
    ASSERT_GT(by_key.size(), 20u);
    expect_identical(by_key, read_trace(data_path(f), with_layouts(true)));
    // And in parallel chunks, each with layouts of its own.
    expect_identical(by_key, read_trace(data_path(f), with_layouts(true, 3)));
  }
}

// Kineto's own layout (a kernel event and a cpu_op, as a PyTorch 2.x trace writes them), learnt
// from the first events, then `odd` in the middle, then the usual events again.
std::string kineto_with(const std::string& odd) {
  const std::string kernel =
      "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void gemm<float>(int)\", \"pid\": 0, \"tid\": 7,\n"
      "    \"ts\": 1712195497407272.674, \"dur\": 12.5,\n    \"args\": {\n"
      "      \"External id\": 31,      \"device\": 0, \"stream\": 7, \"correlation\": 4400,\n"
      "      \"grid\": [80, 1, 1], \"block\": [256, 1, 1], \"registers per thread\": 64\n    }\n  }";
  const std::string op =
      "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n"
      "    \"ts\": 1712195497407270.001, \"dur\": 3.25,\n    \"args\": {\n"
      "      \"External id\": 31,\"Ev Idx\": 17134\n    }\n  }";
  std::string j = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (int i = 0; i < 4; ++i) j += kernel + ",\n" + op + ",\n";
  j += odd + ",\n";
  for (int i = 0; i < 3; ++i) j += op + ",\n" + kernel + ",\n";
  j += op + "\n], \"traceName\": \"x\"}\n";
  return j;
}

TEST(TraceLayouts, TextThatPartsFromALearntLayoutReadsAsMemberByMember) {
  const std::vector<std::pair<std::string, std::string>> odd = {
      {"more_blanks_before_a_value",
       "  {\n    \"ph\": \"X\", \"cat\":  \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n"
       "    \"ts\":   1712195497407271.5, \"dur\": 3.25\n  }"},
      {"fewer_blanks", "  {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1102,\"tid\":1102,\"ts\":5,\"dur\":1}"},
      {"another_key_midway",
       "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n"
       "    \"tss\": 99, \"ts\": 1712195497407272.0, \"dur\": 2\n  }"},
      {"escaped_key",
       "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"n\\u0061me\": \"aten::escaped\", \"pid\": 1102, \"tid\": 1102,\n"
       "    \"ts\": 1712195497407273.0, \"dur\": 2\n  }"},
      {"repeated_key",
       "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n"
       "    \"ts\": 1712195497407274.0, \"ts\": 1712195497407275.0, \"dur\": 2\n  }"},
      {"closes_early", "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\"\n  }"},
      {"empty_object_and_empty_args", "  {}, {\"ph\": \"i\", \"args\": {}}"},
      {"args_in_another_order",
       "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7,\n"
       "    \"ts\": 1712195497407276.0, \"dur\": 1,\n    \"args\": {\n"
       "      \"correlation\": 4401,      \"External id\": 32, \"grid\": [1, 2, 3]\n    }\n  }"},
      {"literal_longer_than_learnt",
       "  {\n    \"ph\": \"X\",                                                         \"cat\": \"cpu_op\", "
       "\"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102, \"ts\": 7, \"dur\": 1}"},
      {"value_of_another_type",
       "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": [\"not\", \"a\", \"string\"], \"pid\": \"1102\", \"tid\": "
       "\"worker\",\n    \"ts\": \"1712195497407277.25\", \"dur\": null,\n    \"args\": [1, 2]\n  }"},
      {"bad_time", "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n"
                   "    \"ts\": \"soon\", \"dur\": 3.25\n  }"},
      {"bad_separator", "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\"; \"name\": \"aten::mm\"\n  }"},
      {"missing_colon", "  {\n    \"ph\": \"X\", \"cat\" \"cpu_op\"\n  }"},
      {"nul_byte", std::string("  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1102, \"tid\": 1102,\n    \"ts\": ") +
                       std::string(1, '\0') + "1, \"dur\": 3.25\n  }"},
  };
  for (const auto& [name, text] : odd) expect_same_both_ways(name, kineto_with(text));
}

// A flow event that is only counted is read up to its "ph"; the rest is skipped as a container is
// (strings whole, brackets matched). Flows of every shape: the same store or error both ways,
// and where they read, the store kept with flows less its flow rows.
TEST(TraceLayouts, FlowEventsSkippedAfterPhReadAsMemberByMember) {
  const std::string flow =
      "  {\n    \"ph\": \"f\", \"id\": 4400, \"pid\": 0, \"tid\": 7, \"ts\": 1712195497407272.674,\n"
      "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }";
  const std::vector<std::pair<std::string, std::string>> flows = {
      {"kineto", flow},
      {"brackets_in_strings", "  {\n    \"ph\": \"s\", \"id\": 1, \"name\": \"a}b]c{\", \"cat\": \"x\\\"}\\\\\"}"},
      {"nested_args", "  {\n    \"ph\": \"t\", \"args\": {\"a\": \"}\\\"{\", \"b\": [1, {\"c\": \"]\"}]}, \"name\": \"x}\"}"},
      {"ph_not_first", "  {\"id\": 5, \"ts\": 3, \"ph\": \"t\", \"pid\": 1, \"tid\": 2, \"name\": \"fwdbwd\"}"},
      {"only_ph", "  {\"ph\": \"f\"}"},
      {"long_rest", "  {\"ph\": \"s\", \"name\": \"" + std::string(300, 'n') + "\\\\" + std::string(100, '}') + "\", \"id\": 2}"},
      {"two_flows", flow + ",\n" + flow},
  };
  for (const auto& [name, text] : flows) {
    const std::string json = kineto_with(text);
    expect_same_both_ways(name, json);
    SCOPED_TRACE(name);
    ReadOptions keep;
    keep.keep_flows = true;
    const EventStore all = parse_trace(json, name, keep);
    const EventStore counted = parse_trace(json, name);
    size_t flows_kept = 0;
    for (size_t i = 0; i < all.size(); ++i) flows_kept += all.ph[i] >= Phase::FlowStart && all.ph[i] <= Phase::FlowEnd;
    EXPECT_GT(flows_kept, 0u);
    EXPECT_EQ(counted.meta.flow_events, flows_kept);
    EXPECT_EQ(counted.size() + flows_kept, all.size());
    EXPECT_EQ(counted.name_of(counted.size() - 1), "aten::mm");
  }
  // What the skip still checks: brackets that match, no NUL outside strings, the object's end.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"wrong_bracket", "  {\"ph\": \"f\", \"args\": {\"a\": [1}}, \"id\": 3}"},
      {"nul_after_ph", std::string("  {\"ph\": \"f\", \"id\": ") + std::string(1, '\0') + "3}"},
      {"unclosed", "  {\"ph\": \"f\", \"name\": \"x\", \"id\": 3"},
  };
  for (const auto& [name, text] : bad) {
    const std::string path = test::temp_dir() + "/" + name + ".json";
    test::write_file(path, kineto_with(text));
    EXPECT_NE(outcome(path, with_layouts(true)), "(read)") << name;
    expect_same_both_ways(name, kineto_with(text));
  }
}

// Cut after every byte of a trace whose layouts are learnt by its middle: the same error both ways.
TEST(TraceLayouts, TruncationAnywhereReadsAsMemberByMember) {
  const std::string whole = kineto_with(
      "  {\n    \"ph\": \"f\", \"id\": 4400, \"pid\": 0, \"tid\": 7, \"ts\": 1712195497407272.674,\n"
      "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }");
  const size_t from = whole.size() / 2;
  for (size_t cut = from; cut < whole.size(); cut += 3) expect_same_both_ways("cut_" + std::to_string(cut), whole.substr(0, cut));
}

// A trace of ever-new layouts (every event's args keys differ) stops learning at the trie's
// bounds, gives its args' layouts up after 4096 objects, and still reads as member by member.
TEST(TraceLayouts, EverNewLayoutsStillReadAsMemberByMember) {
  std::string j = "{\"traceEvents\": [\n";
  for (int i = 0; i < 10000; ++i) {
    if (i) j += ",\n";
    j += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(i) +
         ", \"dur\": 1, \"args\": {\"key" + std::to_string(i) + "\": 1, \"correlation\": " + std::to_string(i) + "}}";
  }
  j += "\n]}\n";
  expect_same_both_ways("ever_new", j);
}

}  // namespace
}  // namespace ts::trace
