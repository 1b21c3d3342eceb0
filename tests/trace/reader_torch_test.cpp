// Records a real trace with Debian's PyTorch 1.13 (CPU, no Kineto: the bare-array form) and reads it.
#include <gtest/gtest.h>

#include <unistd.h>

#include "trace/reader.h"
#include "support/torch_python.h"
#include "trace/trace_test_util.h"

namespace ts::trace {
namespace {

TEST(TraceTorch, RecordsAndReadsABareArrayTrace) {
  int st;
  if (::access("/usr/bin/python3", X_OK) != 0 || !ts::test::system_python_has_torch())
    GTEST_FAIL() << "/usr/bin/python3 with torch is not installed (Debian: apt-get install python3-torch)";
  std::string out = test::temp_dir() + "/torch_trace.json";
  std::string script = std::string(TS_SOURCE_DIR) + "/tests/trace/record_bare_trace.py";
  test::run_command("/usr/bin/python3 '" + script + "' '" + out + "' 2>&1", st);
  ASSERT_EQ(st, 0);
  EventStore s = read_trace(out);
  EXPECT_EQ(s.meta.format, TraceFormat::BareArray);
  EXPECT_EQ(test::summary_of(s), test::reference_for(out));
  // Two record_function steps, each containing the optimizer step, in order.
  size_t s0 = test::find_event(s, "ProfilerStep#0", Category::CpuOp);
  size_t s1 = test::find_event(s, "ProfilerStep#1", Category::CpuOp);
  ASSERT_NE(s0, SIZE_MAX);
  ASSERT_NE(s1, SIZE_MAX);
  EXPECT_GT(s.dur_ns[s0], 0);
  EXPECT_GE(s.ts_ns[s1], s.end_ns(s0));
  EXPECT_EQ(s.id_name(s.pid(s0)), "CPU functions");
  size_t linear = test::find_event(s, "aten::linear", Category::CpuOp);
  ASSERT_NE(linear, SIZE_MAX);
  EXPECT_GE(s.ts_ns[linear], s.ts_ns[s0]);
  EXPECT_NE(test::find_event(s, "Optimizer.step#SGD.step", Category::CpuOp), SIZE_MAX);
}

}  // namespace
}  // namespace ts::trace
