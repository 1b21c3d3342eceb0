// Specific values, read off the fixtures by hand (zcat F | grep), and small synthetic traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/trace_test_util.h"
#include "util/error.h"

namespace ts::trace {
namespace {

using test::data_path;

TEST(TraceValues, SubMicrosecondEpochTimestampsKeepTheirNanoseconds) {
  ReadOptions with_flows;
  with_flows.keep_flows = true;
  EventStore s = read_trace(data_path("hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), with_flows);
  // "ts": 1712195495505582.988, "dur": 4.928 (a double would give ...582.98828125 -> 582988 ns only by luck)
  std::string_view kname =
      "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous "
      "namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1>(at::native::(anonymous namespace)::OpaqueType<4u>*, "
      "at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous "
      "namespace)::OpaqueType<4u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned "
      "int, 4u>, int, unsigned int)";
  size_t k = test::find_event(s, kname, Category::Kernel);
  ASSERT_NE(k, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[k], 1712195495505582988);
  EXPECT_EQ(s.dur_ns[k], 4928);
  EXPECT_EQ(s.pid(k), 0);
  EXPECT_EQ(s.tid(k), 7);
  EXPECT_EQ(s.correlation[k], 135071);
  EXPECT_EQ(s.external_id[k], 112);
  const EventArgs* a = s.args_of(k);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->grid[0], 4);
  EXPECT_EQ(a->grid[1], 106);
  EXPECT_EQ(a->grid[2], 1);
  EXPECT_EQ(a->block[0], 128);
  EXPECT_EQ(a->registers_per_thread, 30);
  EXPECT_EQ(a->shared_memory, 0);
  EXPECT_FLOAT_EQ(a->blocks_per_sm, 5.3f);
  EXPECT_FLOAT_EQ(a->warps_per_sm, 21.200001f);
  EXPECT_FLOAT_EQ(a->occupancy_pct, 33.f);
  EXPECT_EQ(a->device_id, 0);
  // The flow end at the kernel carries the correlation as its id.
  bool found_flow = false;
  for (size_t i = k + 1; i < s.size() && i < k + 3; ++i)
    if (s.ph[i] == Phase::FlowEnd && s.cat[i] == Category::FlowLaunch) {
      EXPECT_EQ(s.correlation[i], 135071);
      EXPECT_EQ(s.ts_ns[i], 1712195495505582988);
      found_flow = true;
    }
  EXPECT_TRUE(found_flow);

  size_t m = test::find_event(s, "Memcpy DtoD (Device -> Device)", Category::GpuMemcpy);
  ASSERT_NE(m, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[m], 1712195495506161288);
  EXPECT_EQ(s.dur_ns[m], 1280);
  ASSERT_NE(s.args_of(m), nullptr);
  EXPECT_EQ(s.args_of(m)->bytes, 256);
  EXPECT_FLOAT_EQ(s.args_of(m)->bandwidth_gbps, 0.2f);
}

TEST(TraceValues, Kineto2021StringTidsExternalIdAndMemory) {
  EventStore s = read_trace(data_path("tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"));
  size_t k = test::find_event(s, "volta_scudnn_128x64_relu_medium_nn_v1", Category::Kernel);
  ASSERT_NE(k, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[k], 1623142623531639000);
  EXPECT_EQ(s.dur_ns[k], 605000);
  EXPECT_EQ(s.correlation[k], 34442);
  EXPECT_EQ(s.external_id[k], 544);  // lowercase "external id"
  ASSERT_TRUE(EventStore::is_named_id(s.tid(k)));
  EXPECT_EQ(s.id_name(s.tid(k)), "stream 7");
  const EventArgs* a = s.args_of(k);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->grid[0], 3136);
  EXPECT_EQ(a->registers_per_thread, 128);
  EXPECT_EQ(a->shared_memory, 16384);
  EXPECT_FLOAT_EQ(a->blocks_per_sm, 39.2f);
  EXPECT_FLOAT_EQ(a->occupancy_pct, 25.f);

  size_t c = test::find_event(s, "Memcpy HtoD (Pageable -> Device)", Category::GpuMemcpy);
  ASSERT_NE(c, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[c], 1623142623529248000);
  EXPECT_EQ(s.args_of(c)->bytes, 19267584);
  EXPECT_FLOAT_EQ(s.args_of(c)->bandwidth_gbps, 9.927016204653041f);

  // First [memory] instant: "ts": 1623142623460121, "Device Type": 0, "Device Id": -1, "Bytes": 4.
  size_t mem = test::find_event(s, "[memory]", Category::Memory);
  ASSERT_NE(mem, SIZE_MAX);
  EXPECT_EQ(s.ph[mem], Phase::Instant);
  EXPECT_EQ(s.ts_ns[mem], 1623142623460121000);
  EXPECT_EQ(s.dur_ns[mem], 0);
  ASSERT_NE(s.args_of(mem), nullptr);
  EXPECT_EQ(s.args_of(mem)->bytes, 4);
  EXPECT_EQ(s.args_of(mem)->device_type, 0);
  EXPECT_EQ(s.args_of(mem)->device_id, -1);

  // "aten::empty" with "tid": "25738" (a numeric string) and raw Input Dims / Input type.
  size_t op = test::find_event(s, "aten::empty", Category::CpuOp);
  ASSERT_NE(op, SIZE_MAX);
  EXPECT_EQ(s.pid(op), 25738);
  EXPECT_EQ(s.tid(op), 25738);
  EXPECT_EQ(s.ts_ns[op], 1623142623460111000);
  EXPECT_EQ(s.external_id[op], 2);  // capitalised "External id" on operators
  EXPECT_EQ(s.strings.view(s.input_dims[op]), "[[], [], [], [], [], []]");
  EXPECT_EQ(s.strings.view(s.input_types[op]), "[\"GenericList\", \"Int\", \"\", \"\", \"Bool\", \"\"]");
  EXPECT_EQ(s.args[op], kNoArgs);  // operators keep no EventArgs row

  // Thread names from ph:"M" with string tids.
  bool found = false;
  for (const auto& t : s.thread_names)
    if (t.pid == 25738 && t.tid == 25772) {
      EXPECT_EQ(s.strings.view(t.name), "thread 25772 (python)");
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(s.process_names.size(), 9u);  // grep -c '"process_name"' (8 GPUs + the host)
}

TEST(TraceValues, AmdInputDimsRawJson) {
  EventStore s = read_trace(data_path("hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  size_t op = test::find_event(s, "MseLossBackward0", Category::CpuOp);
  ASSERT_NE(op, SIZE_MAX);
  EXPECT_EQ(s.ts_ns[op], 4203669604613811);
  EXPECT_EQ(s.dur_ns[op], 311681);
  EXPECT_EQ(s.external_id[op], 514);
  EXPECT_EQ(s.strings.view(s.input_dims[op]), "[[]]");
  EXPECT_EQ(s.strings.view(s.input_types[op]), "[\"float\"]");
}

TEST(TraceValues, SyntheticModernForms) {
  // Numbers as ints, floats, strings and exponents; X without dur; escapes; keys in any order;
  // baseTimeNanoseconds after traceEvents; [memory] with totals; unknown nested values skipped.
  std::string json = R"JSON({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\ud83d\ude00", "pid": 10, "tid": 11, "ts": "1700000000000000.5", "dur": 2.25},
    {"name": "nodur", "ph": "X", "cat": "CPU_OP", "pid": 10, "tid": 11, "ts": 1.5e3},
    {"args": {"Device Type": 1, "Device Id": 2, "Bytes": -4096, "Total Allocated": 123456789012, "Total Reserved": 2147483648, "Addr": 94}, "ph": "i", "s": "t", "name": "[memory]", "cat": "cpu_instant_event", "pid": 10, "tid": 11, "ts": 7},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 8, "dur": 1,
     "args": {"weird": {"a": [1, {"b": "]}"}, [[[]]]], "c": null}, "bytes": 64, "correlation": "99", "External id": 12}},
    {"ph": "s", "id": 99, "pid": 10, "tid": 11, "ts": 9, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 0.0004, "args": {"grid": [2, 3], "block": [1, 2, 3, 4]}},
    {"ph": "X", "cat": "mystery", "name": "m", "pid": 0, "tid": 7, "ts": -5, "dur": 1}
  ], "baseTimeNanoseconds": 1700000000000000000, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]})JSON";
  ReadOptions with_flows;
  with_flows.keep_flows = true;
  EventStore s = parse_trace(json, "synthetic", with_flows);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s.meta.flow_events, 0u);
  // By default the flow is counted, not stored; the rows after it move up by one.
  EventStore d = parse_trace(json, "synthetic");
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d.meta.flow_events, 1u);
  EXPECT_EQ(d.events_read(), 7u);
  EXPECT_EQ(d.name_of(4), "k");
  EXPECT_EQ(d.args_of(4)->grid[1], 3);
  EXPECT_EQ(d.ts_ns[5], -5000);
  EXPECT_EQ(s.name_of(0), "a\"b\\c\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(s.ts_ns[0], 1700000000000000500);
  EXPECT_EQ(s.dur_ns[0], 2250);
  EXPECT_EQ(s.cat[1], Category::CpuOp);
  EXPECT_EQ(s.ts_ns[1], 1500000);
  EXPECT_EQ(s.dur_ns[1], 0);
  EXPECT_EQ(s.cat[2], Category::Memory);
  const EventArgs* m = s.args_of(2);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->bytes, -4096);
  EXPECT_EQ(m->total_allocated, 123456789012);
  EXPECT_EQ(m->total_reserved, 2147483648);
  EXPECT_EQ(m->device_type, 1);
  EXPECT_EQ(m->device_id, 2);
  EXPECT_EQ(s.cat[3], Category::GpuMemset);
  EXPECT_EQ(s.args_of(3)->bytes, 64);
  EXPECT_EQ(s.correlation[3], 99);
  EXPECT_EQ(s.external_id[3], 12);
  EXPECT_EQ(s.ph[4], Phase::FlowStart);
  EXPECT_EQ(s.correlation[4], 99);
  EXPECT_EQ(s.dur_ns[5], 0);  // 0.4 ns rounds to 0
  EXPECT_EQ(s.args_of(5)->grid[0], 2);
  EXPECT_EQ(s.args_of(5)->grid[1], 3);
  EXPECT_EQ(s.args_of(5)->grid[2], 0);
  EXPECT_EQ(s.args_of(5)->block[2], 3);
  EXPECT_EQ(s.cat[6], Category::Other);
  EXPECT_EQ(s.ts_ns[6], -5000);
  EXPECT_EQ(s.meta.base_time_ns, 1700000000000000000);
  EXPECT_EQ(s.meta.format, TraceFormat::Kineto);
  ASSERT_EQ(s.meta.devices.size(), 1u);
  EXPECT_EQ(s.meta.devices[0].num_sms, 132);
  EXPECT_FALSE(s.meta.is_rocm);
  EXPECT_EQ(s.meta.input_bytes, json.size());
}

TEST(TraceValues, MaxEventsIsHonoured) {
  ReadOptions opt;
  opt.max_events = 100;
  try {
    read_trace(data_path("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"), opt);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 100 events"), std::string::npos) << e.what();
  }
}

TEST(TraceValues, ProgressIsReported) {
  uint64_t last_uncompressed = 0, last_raw = 0, size = 0;
  int calls = 0;
  ReadOptions opt;
  opt.progress = [&](uint64_t u, uint64_t r, uint64_t total) {
    EXPECT_GE(u, last_uncompressed);
    last_uncompressed = u;
    last_raw = r;
    size = total;
    ++calls;
  };
  std::string path = data_path("hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  EventStore s = read_trace(path, opt);
  EXPECT_GE(calls, 2);  // 15 MB in 8 MiB windows
  EXPECT_EQ(last_uncompressed, s.meta.input_bytes);
  EXPECT_EQ(s.meta.input_bytes, 15377659u);  // zcat | wc -c
  EXPECT_EQ(size, 1152519u);
  EXPECT_EQ(last_raw, size);
}

TEST(TraceValues, NegativeNumericTidIsANumberNotAName) {
  // hta_ns_resolution's profiler thread is written as "tid": -247463936. Names ("stream 7")
  // are interned in a range no written number reaches, so the two never collide, and the
  // parallel reader's merge (which renumbers names) leaves the number alone.
  std::string json = R"JSON({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 10, "tid": -247463936, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": "Spans", "tid": "-5", "ts": 3, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": -1, "tid": "stream 7", "ts": 4, "dur": 1}]})JSON";
  std::string path = test::temp_dir() + "/negative_tid.json";
  test::write_file(path, json);
  EventStore s = read_trace(path);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(EventStore::is_named_id(s.tid(0)));
  EXPECT_EQ(s.tid(0), -247463936);
  ASSERT_TRUE(EventStore::is_named_id(s.pid(1)));
  EXPECT_EQ(s.id_name(s.pid(1)), "Spans");
  EXPECT_EQ(s.tid(1), -5);
  EXPECT_FALSE(EventStore::is_named_id(s.pid(2)));
  EXPECT_EQ(s.pid(2), -1);
  ASSERT_TRUE(EventStore::is_named_id(s.tid(2)));
  EXPECT_EQ(s.id_name(s.tid(2)), "stream 7");
}

TEST(TraceValues, KernelFloatArgsEqualFromChars) {
  // "blocks per SM", "warps per SM", occupancy and bandwidth are read as doubles, then floats:
  // short decimals by a fast path, the rest by std::from_chars. Every form gives what
  // from_chars gives: integers, 1-15 digits around a '.', leading zeros, negatives, 16-20
  // digits, exponents, strings, and values a float cannot hold (clamped).
  std::mt19937_64 rng(7);
  std::vector<std::string> texts = {"0", "-0", "0.0", "12.800000", "204.800003", "75", "0.1", "0.3",
                                    "123456789012345", "1234567890.12345", "0.000000000000001",
                                    "9007199254740993", "12345678901234567890", "1e3", "2.5E-2", "-7.125",
                                    "00012.50", "3.4e39", "-3.4e39", "1.7976931348623157e308", "4.9e-324",
                                    "\"12.5\"", "\"-0.25\""};
  for (int i = 0; i < 3000; ++i) {
    std::string t = (rng() % 4 == 0) ? "-" : "";
    const int digits = 1 + static_cast<int>(rng() % 17);
    const int point = static_cast<int>(rng() % (digits + 1));  // digits before the '.'; all: none
    for (int d = 0; d < digits; ++d) {
      if (d == point && point > 0) t += '.';
      t += static_cast<char>('0' + rng() % 10);
    }
    texts.push_back(t);
  }
  std::string json = R"({"traceEvents": [)";
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i) json += ",";
    json += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(i) +
            R"(, "dur": 1, "args": {"blocks per SM": )" + texts[i] + R"(, "warps per SM": )" + texts[i] +
            R"(, "est. achieved occupancy %": )" + texts[i] + "}}";
  }
  json += "]}";
  EventStore s = parse_trace(json, "floats");
  ASSERT_EQ(s.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string t = texts[i];
    if (t.front() == '"') t = t.substr(1, t.size() - 2);
    double v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    ASSERT_TRUE(r.ec == std::errc() && r.ptr == t.data() + t.size()) << t;
    const float want = static_cast<float>(std::clamp(v, -3.0e38, 3.0e38));
    const EventArgs* a = s.args_of(i);
    ASSERT_NE(a, nullptr) << t;
    // Bit for bit (-0 included), not merely close.
    EXPECT_EQ(std::memcmp(&a->blocks_per_sm, &want, sizeof want), 0) << t << ": " << a->blocks_per_sm << " vs " << want;
    EXPECT_EQ(std::memcmp(&a->warps_per_sm, &want, sizeof want), 0) << t;
    EXPECT_EQ(std::memcmp(&a->occupancy_pct, &want, sizeof want), 0) << t;
  }
}

}  // namespace
}  // namespace ts::trace
