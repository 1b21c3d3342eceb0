// json_cut_off on real traces (tests/data, PROVENANCE.md) cut where a profiler killed mid-write
// leaves them: the old test of the last byte alone took a cut just after any event's '}' for a
// whole file (CI saw it on a two-node job's trace cut at half its size).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/trace_test_util.h"
#include "trace/written_whole.h"

namespace ts::trace {
namespace {

std::string fixture_text(const std::string& name) {
  const std::string p = test::data_path(name);
  return name.ends_with(".gz") ? test::gunzip_file(p) : test::read_file(p);
}

bool cut_off_bytes(const std::string& bytes, const char* name = "t.json") {
  const std::string p = test::temp_dir() + "/" + name;
  test::write_file(p, bytes);
  return json_cut_off(p);
}

// The small fixtures: Kineto (CUDA, ROCm, CPU only, Triton) and PyTorch 1.13's bare array.
const char* kSmall[] = {
    "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
    "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta_triton_example_triton_example.json.gz",
    "torch113_bare_array_cpu.json",
};

TEST(WrittenWhole, WholeTracesAreWhole) {
  for (const char* name : kSmall) {
    const std::string text = fixture_text(name);
    EXPECT_FALSE(cut_off_bytes(text)) << name;
    EXPECT_FALSE(cut_off_bytes(text + "\n\n  ")) << name << " with blanks after its end";
  }
}

TEST(WrittenWhole, EveryCutAfterAClosingBracketIsCutOff) {
  for (const char* name : kSmall) {
    const std::string text = fixture_text(name);
    const size_t end = text.find_last_not_of(" \t\r\n");
    ASSERT_NE(end, std::string::npos) << name;
    std::vector<size_t> cuts;  // prefixes whose last byte is '}' or ']': each closes an inner value
    for (size_t i = 0; i < end; ++i)
      if (text[i] == '}' || text[i] == ']') cuts.push_back(i + 1);
    ASSERT_GT(cuts.size(), 10u) << name;
    const size_t step = cuts.size() / 200 + 1;  // at most ~200 files per fixture
    for (size_t k = 0; k < cuts.size(); k += step)
      EXPECT_TRUE(cut_off_bytes(text.substr(0, cuts[k]))) << name << " cut at byte " << cuts[k];
    // And at half its size, as the two-node test cuts, and one byte short of the end.
    EXPECT_TRUE(cut_off_bytes(text.substr(0, text.size() / 2))) << name;
    EXPECT_TRUE(cut_off_bytes(text.substr(0, end))) << name;
  }
}

TEST(WrittenWhole, BracketsInsideStringsDoNotCount) {
  // A kernel name with braces and an escaped quote: cut after the string's '}' and '"'.
  const std::string text = R"x({"traceEvents": [{"name": "void f<{0}>(\"}\")", "ph": "X"}]})x";
  EXPECT_FALSE(cut_off_bytes(text));
  for (size_t i = 1; i < text.size(); ++i) EXPECT_TRUE(cut_off_bytes(text.substr(0, i))) << "cut at " << i;
}

TEST(WrittenWhole, EscapesAcrossBlocksAndEveryPrefix) {
  // Names with escaped quotes, escaped backslashes before a closing quote, and brackets, at
  // every alignment to the 64-byte blocks the scan takes at once: each prefix is cut off.
  const char* names[] = {R"(a\"{b)", R"(\\)", R"(x\\\"]})", R"({[)", R"(\\\\\")", R"(plain)"};
  std::string text = "{\"traceEvents\": [";
  for (int i = 0; i < 60; ++i) {
    if (i) text += ",";
    text += "{\"name\": \"" + std::string(names[i % 6]) + std::string(static_cast<size_t>(i % 7), 'x') +
            "\", \"args\": {\"v\": [" + std::to_string(i) + "]}}";
  }
  text += "]}";
  EXPECT_FALSE(cut_off_bytes(text));
  for (size_t i = 1; i < text.size(); ++i) ASSERT_TRUE(cut_off_bytes(text.substr(0, i))) << "cut at " << i;
}

TEST(WrittenWhole, EmptyIsCutOffAndOtherDamageIsLeftToTheReader) {
  EXPECT_TRUE(cut_off_bytes(""));
  EXPECT_TRUE(cut_off_bytes("   \n"));
  // Bytes after the end and a top-level scalar are the reader's errors, not a cut.
  EXPECT_FALSE(cut_off_bytes("{\"traceEvents\": []} trailing"));
  EXPECT_FALSE(cut_off_bytes("42"));
  // A .json.gz is not inflated here (a cut gzip gets the reader's "truncated" error).
  EXPECT_FALSE(cut_off_bytes("{\"traceEvents\": [", "t.json.gz"));
}

}  // namespace
}  // namespace ts::trace
