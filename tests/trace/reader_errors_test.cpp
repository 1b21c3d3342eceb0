// Bad input: one UserError naming the file and the byte offset; never a crash or a hang.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <random>

#include "support/contains.h"
#include "trace/reader.h"
#include "trace/trace_test_util.h"
#include "trace/written_whole.h"
#include "util/error.h"

namespace ts::trace {
namespace {

using test::data_path;

using test::error_of;

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string p = test::temp_dir() + "/" + name;
  test::write_file(p, bytes);
  return p;
}

using ts::test::has;

const char* kAlexnet = "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz";

TEST(TraceErrors, MissingFileAndDirectory) {
  std::string e = error_of("/nonexistent/dir/trace.json");
  EXPECT_EQ(e, "/nonexistent/dir/trace.json: cannot open: No such file or directory");
  e = error_of(test::temp_dir());
  EXPECT_TRUE(has(e, test::temp_dir() + ": is a directory")) << e;
}

TEST(TraceErrors, EmptyAndWhitespaceFiles) {
  std::string p = write_temp("empty.json", "");
  EXPECT_EQ(error_of(p), p + ": byte 0: expected a JSON trace, but the file is empty");
  p = write_temp("blank.json", "  \n\t ");
  EXPECT_TRUE(has(error_of(p), p + ": byte 5: unexpected end of file")) << error_of(p);
}

TEST(TraceErrors, NotATrace) {
  std::string p = write_temp("obj.json", R"({"a": 1, "b": [1, 2, {"c": null}]})");
  EXPECT_EQ(error_of(p), p + ": not a PyTorch profiler trace: expected a \"traceEvents\" array or a JSON array of events");
  p = write_temp("text.json", "hello world");
  EXPECT_EQ(error_of(p), p + ": byte 0: expected '{' or '[' at the start of a PyTorch profiler trace (this is not JSON)");
  p = write_temp("numbers.json", R"({"traceEvents": [1, 2]})");
  EXPECT_EQ(error_of(p), p + ": byte 17: expected an event object '{'");
  p = write_temp("trailing.json", R"({"traceEvents": []} x)");
  EXPECT_EQ(error_of(p), p + ": byte 20: expected the end of the file after the trace's closing bracket");
  p = write_temp("badts.json", R"({"traceEvents": [{"ph": "X", "ts": "soon"}]})");
  EXPECT_TRUE(has(error_of(p), p + ": byte 35: expected a number of microseconds for \"ts\"")) << error_of(p);
  p = write_temp("nul.json", std::string("{\"traceEvents\": [\0]}", 20));
  EXPECT_TRUE(has(error_of(p), p + ": byte 17: ")) << error_of(p);
}

TEST(TraceErrors, RandomBinary) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    std::string bytes(4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    std::string p = write_temp("random" + std::to_string(i) + ".bin", bytes);
    std::string e = error_of(p);
    EXPECT_TRUE(has(e, p + ": byte ")) << e;
  }
}

TEST(TraceErrors, TruncatedPlainJsonAtManyOffsets) {
  std::string full = test::gunzip_file(data_path(kAlexnet));
  ASSERT_EQ(full.size(), 319512u);
  for (size_t len : {size_t(1), size_t(2), size_t(17), size_t(100), size_t(1000), size_t(4097), full.size() / 3,
                     full.size() / 2, full.size() - 100, full.size() - 3}) {
    std::string p = write_temp("trunc.json", full.substr(0, len));
    std::string e = error_of(p);
    EXPECT_EQ(e.rfind(p + ": byte " + std::to_string(len) + ": unexpected end of file (truncated?), expected ", 0), 0u)
        << "len " << len << ": " << e;
    EXPECT_THROW(read_trace(p), CutOffError) << "len " << len;  // a job directory leaves such a trace out
  }
  // Cutting only the final newline leaves a complete trace.
  std::string p = write_temp("trunc.json", full.substr(0, full.size() - 1));
  EXPECT_EQ(read_trace(p).events_read(), 1408u);
}

TEST(TraceErrors, TruncatedGzipAtManyOffsets) {
  std::string gz = test::read_file(data_path(kAlexnet));
  for (size_t len : {size_t(2), size_t(3), size_t(10), size_t(20), size_t(1000), gz.size() / 2, gz.size() - 8,
                     gz.size() - 1}) {
    std::string p = write_temp("trunc.json.gz", gz.substr(0, len));
    std::string e = error_of(p);
    EXPECT_TRUE(has(e, p + ": byte ")) << e;
    EXPECT_TRUE(has(e, "gzip")) << "len " << len << ": " << e;
  }
  // Cut inside the deflate stream: the data ends early, as a copy cut short leaves it.
  EXPECT_THROW(read_trace(write_temp("trunc.json.gz", gz.substr(0, gz.size() / 2))), CutOffError);
}

TEST(TraceErrors, FlippedBytesInGzip) {
  std::string gz = test::read_file(data_path(kAlexnet));
  std::mt19937 rng(7);
  for (int i = 0; i < 30; ++i) {
    std::string bad = gz;
    size_t at = 10 + rng() % (bad.size() - 10);
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    std::string p = write_temp("flip.json.gz", bad);
    std::string e = error_of(p);  // a corrupt deflate stream, bad JSON, or a CRC mismatch
    EXPECT_TRUE(has(e, p + ": byte ")) << "flip at " << at << ": " << e;
  }
}

TEST(TraceErrors, FlippedBytesInPlainJsonNeverCrash) {
  std::string full = test::gunzip_file(data_path(kAlexnet));
  std::mt19937 rng(11);
  int errors = 0;
  for (int i = 0; i < 200; ++i) {
    std::string bad = full;
    size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(rng());
    try {
      parse_trace(bad, "flipped");
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("flipped: ", 0), 0u);
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  // A structural byte replaced: the offset is exact.
  std::string bad = full;
  size_t brace = bad.find("{", 5000);
  bad[brace] = 'x';
  try {
    parse_trace(bad, "flipped");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "flipped: byte " + std::to_string(brace) + ": expected an event object '{'");
  }
}

TEST(TraceErrors, GzipWithTrailingGarbage) {
  std::string gz = test::read_file(data_path("hta_triton_example_triton_example.json.gz"));
  std::string p = write_temp("garbage.json.gz", gz + "garbage");
  EXPECT_TRUE(has(error_of(p), "of the gzip file: expected end of file or another gzip member")) << error_of(p);
  // Zero padding (as tape and some tools leave) is accepted.
  p = write_temp("padded.json.gz", gz + std::string(100, '\0'));
  EXPECT_EQ(read_trace(p).events_read(), 71u);
}

TEST(TraceErrors, DeepNestingIsBounded) {
  std::string json = R"({"traceEvents": [{"ph": "X", "args": {"x": )" + std::string(100000, '[');
  std::string p = write_temp("deep.json", json);
  EXPECT_TRUE(has(error_of(p), "nesting shallower than")) << error_of(p);
  json = R"({"deep": )" + std::string(100000, '{');
  EXPECT_THROW(parse_trace(json, "deep"), UserError);
}

TEST(TraceErrors, UnterminatedHugeString) {
  std::string json = R"({"traceEvents": [{"ph": "X", "name": ")" + std::string(20 << 20, 'a');
  try {
    parse_trace(json, "huge");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "huge: byte " + std::to_string(json.size()) + ": unexpected end of file (truncated?), expected a closing '\"'");
  }
}

}  // namespace
}  // namespace ts::trace
