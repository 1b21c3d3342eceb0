// The streaming window must not change what is read: tiny windows (every item split across
// refills), .json vs .json.gz, and multi-member gzip all give identical stores.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <thread>

#include "trace/byte_source.h"
#include "trace/reader.h"
#include "trace/trace_parser.h"
#include "trace/trace_test_util.h"

namespace ts::trace {
namespace {

using test::data_path;

void expect_same(const EventStore& a, const EventStore& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a.name_of(i), b.name_of(i)) << i;
    ASSERT_EQ(a.cat[i], b.cat[i]) << i;
    ASSERT_EQ(a.ph[i], b.ph[i]) << i;
    ASSERT_EQ(a.ts_ns[i], b.ts_ns[i]) << i;
    ASSERT_EQ(a.dur_ns[i], b.dur_ns[i]) << i;
    ASSERT_EQ(a.correlation[i], b.correlation[i]) << i;
    ASSERT_EQ(a.external_id[i], b.external_id[i]) << i;
    ASSERT_EQ(a.strings.view(a.input_dims[i]), b.strings.view(b.input_dims[i])) << i;
    ASSERT_EQ(a.args[i] == kNoArgs, b.args[i] == kNoArgs) << i;
    if (a.args[i] != kNoArgs) {
      ASSERT_EQ(a.args_of(i)->bytes, b.args_of(i)->bytes) << i;
      ASSERT_EQ(a.args_of(i)->grid[0], b.args_of(i)->grid[0]) << i;
    }
    ASSERT_EQ(EventStore::is_named_id(a.tid(i)), EventStore::is_named_id(b.tid(i))) << i;
    if (EventStore::is_named_id(a.tid(i))) ASSERT_EQ(a.id_name(a.tid(i)), b.id_name(b.tid(i)));
    else ASSERT_EQ(a.tid(i), b.tid(i));
  }
  EXPECT_EQ(a.meta.base_time_ns, b.meta.base_time_ns);
  EXPECT_EQ(a.meta.devices.size(), b.meta.devices.size());
  EXPECT_EQ(a.meta.format, b.meta.format);
  EXPECT_EQ(a.meta.input_bytes, b.meta.input_bytes);
  EXPECT_EQ(a.thread_names.size(), b.thread_names.size());
}

TEST(TraceStreaming, TinyWindowsGiveTheSameStore) {
  for (const char* f : {"hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
                        "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                        "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                        "torch113_bare_array_cpu.json"}) {
    EventStore whole = read_trace(data_path(f));
    std::string json = f == std::string("torch113_bare_array_cpu.json") ? test::read_file(data_path(f))
                                                                          : test::gunzip_file(data_path(f));
    for (size_t window : {16, 17, 33, 100, 4096}) {
      auto src = memory_byte_source(json);
      EventStore part = detail::parse_source(*src, f, ReadOptions{}, window);
      SCOPED_TRACE(std::string(f) + " window " + std::to_string(window));
      expect_same(whole, part);
    }
  }
}

TEST(TraceStreaming, ManyRefillsInsideNestedArgs) {
  // Thousands of refills, many inside args with nested Input Dims: the nesting count must
  // restart with each re-parsed item (it once leaked a level per refill and failed after 256).
  const char* f = "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
  std::string json = test::gunzip_file(data_path(f));
  auto src = memory_byte_source(json);
  EventStore part = detail::parse_source(*src, f, ReadOptions{}, 64);
  expect_same(read_trace(data_path(f)), part);
}

TEST(TraceStreaming, PlainAndGzipAgree) {
  std::string gz = data_path("tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz");
  std::string plain = test::temp_dir() + "/tb4.json";
  test::write_file(plain, test::gunzip_file(gz));
  expect_same(read_trace(gz), read_trace(plain));
}

TEST(TraceStreaming, MappedPlainFileReportsProgressAndMatchesGzip) {
  // A plain regular file is parsed in place (mmap) and its pages released every 16 MiB.
  std::string gz = data_path("tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz");
  std::string plain = test::temp_dir() + "/tb0.json";
  test::write_file(plain, test::gunzip_file(gz));
  int calls = 0;
  uint64_t last = 0;
  ReadOptions opt;
  opt.progress = [&](uint64_t u, uint64_t, uint64_t total) {
    EXPECT_GT(u, last);
    EXPECT_EQ(total, 35154637u);
    last = u;
    ++calls;
  };
  EventStore mapped = read_trace(plain, opt);
  EXPECT_GE(calls, 2);  // 35 MB: two release points
  expect_same(read_trace(gz), mapped);
}

TEST(TraceStreaming, PipeIsReadThroughTheWindow) {
  // A FIFO cannot be mapped: the read() window path handles plain JSON from it.
  std::string json = test::gunzip_file(data_path("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"));
  std::string fifo = test::temp_dir() + "/trace.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { test::write_file(fifo, json); });
  EventStore s = read_trace(fifo);
  writer.join();
  EXPECT_EQ(s.events_read(), 1408u);
  EXPECT_EQ(s.meta.input_bytes, json.size());
}

TEST(TraceStreaming, GzipFromAPipe) {
  std::string gz = test::read_file(data_path("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"));
  std::string fifo = test::temp_dir() + "/trace_gz.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { test::write_file(fifo, gz); });
  EventStore s = read_trace(fifo);
  writer.join();
  EXPECT_EQ(s.events_read(), 1408u);
}

TEST(TraceStreaming, MultiMemberGzip) {
  // gzip members concatenated (as `cat a.gz b.gz` makes) inflate to the concatenated text.
  std::string json = test::gunzip_file(data_path("hta_trace_filter_sampled_rank-0.json.gz"));
  std::string dir = test::temp_dir();
  size_t cut = json.size() / 3;
  test::write_file(dir + "/part1", json.substr(0, cut));
  test::write_file(dir + "/part2", json.substr(cut, cut));
  test::write_file(dir + "/part3", json.substr(2 * cut));
  int st;
  test::run_command("cd '" + dir + "' && gzip -f part1 part2 part3 && cat part1.gz part2.gz part3.gz > multi.json.gz", st);
  ASSERT_EQ(st, 0);
  EventStore multi = read_trace(dir + "/multi.json.gz");
  expect_same(read_trace(data_path("hta_trace_filter_sampled_rank-0.json.gz")), multi);
  EXPECT_EQ(multi.events_read(), 4855u);
}

TEST(TraceStreaming, GzipDetectedByMagicNotExtension) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/really_gz.json", test::read_file(data_path("hta_triton_example_triton_example.json.gz")));
  test::write_file(dir + "/really_plain.json.gz", test::gunzip_file(data_path("hta_triton_example_triton_example.json.gz")));
  EXPECT_EQ(read_trace(dir + "/really_gz.json").events_read(), 71u);
  EXPECT_EQ(read_trace(dir + "/really_plain.json.gz").events_read(), 71u);
}

}  // namespace
}  // namespace ts::trace
