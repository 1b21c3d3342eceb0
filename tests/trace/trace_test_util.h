#pragma once
// Helpers shared by the trace reader tests.
#include <cstdint>
#include <map>
#include <string>

#include "trace/event_store.h"
#include "trace/reader.h"

namespace ts::trace::test {

std::string data_path(const std::string& name);  // tests/data/<name>
// Every trace fixture in tests/data, one of each form the reader knows (PROVENANCE.md).
inline constexpr const char* kFixtures[] = {
    "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz",
    "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
    "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta_trace_filter_sampled_rank-0.json.gz",
    "hta_nccl_parser_config_nccl_data.json.gz",
    "hta_triton_example_triton_example.json.gz",
    "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "torch113_bare_array_cpu.json",
};
std::string read_file(const std::string& path);
std::string gunzip_file(const std::string& path);  // via zcat
void write_file(const std::string& path, const std::string& bytes);
std::string temp_dir();  // a fresh directory for this test process

// Runs a command, returns its stdout; sets `status` to the exit status.
std::string run_command(const std::string& cmd, int& status);

// What reference_counts.py prints, as key -> value text ("events" -> "123", "cat kernel" -> "9").
std::map<std::string, std::string> reference_for(const std::string& path);

// Same keys computed from a parsed store.
std::map<std::string, std::string> summary_of(const EventStore& s);

// Every row, string, args entry, name and metadata field equal (gtest expectations).
void expect_identical(const EventStore& a, const EventStore& b);

// The UserError message reading `path` gives; a test failure and "" when it reads without one.
std::string error_of(const std::string& path, const ReadOptions& opt = {});

// Index of the first event with this name and category, or SIZE_MAX.
size_t find_event(const EventStore& s, std::string_view name, Category c);

}  // namespace ts::trace::test
