#pragma once
// Helpers shared by the trace reader tests.
#include <cstdint>
#include <map>
#include <string>

#include "trace/event_store.h"

namespace ts::trace::test {

std::string data_path(const std::string& name);  // tests/data/<name>
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

// Index of the first event with this name and category, or SIZE_MAX.
size_t find_event(const EventStore& s, std::string_view name, Category c);

}  // namespace ts::trace::test
