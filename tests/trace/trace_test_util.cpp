#include "trace/trace_test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "util/error.h"

namespace ts::trace::test {

std::string data_path(const std::string& name) { return std::string(TS_TEST_DATA) + "/" + name; }

std::string error_of(const std::string& path, const ReadOptions& opt) {
  try {
    read_trace(path, opt);
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string run_command(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string gunzip_file(const std::string& path) {
  int st;
  std::string out = run_command("zcat '" + path + "'", st);
  if (st != 0) throw std::runtime_error("zcat failed on " + path);
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

// One directory per test process, removed when the process exits: ctest runs every test as a
// process of its own, and the directories (up to 260 MB each) had piled up by the thousand.
std::string temp_dir() {
  struct Dir {
    std::string path;
    Dir() {
      char tmpl[] = "/tmp/ts_trace_test.XXXXXX";
      const char* d = ::mkdtemp(tmpl);
      if (!d) throw std::runtime_error("mkdtemp failed");
      path = d;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

std::map<std::string, std::string> reference_for(const std::string& path) {
  int st;
  std::string out =
      run_command("python3 '" + std::string(TS_SOURCE_DIR) + "/tests/trace/reference_counts.py' '" + path + "'", st);
  if (st != 0) throw std::runtime_error("reference_counts.py failed on " + path);
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.rfind(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return m;
}

static std::string to_string_i128(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int d = static_cast<int>(v % 10);
    s += static_cast<char>('0' + (neg ? -d : d));
    v /= 10;
  }
  if (neg) s += '-';
  return std::string(s.rbegin(), s.rend());
}

std::map<std::string, std::string> summary_of(const EventStore& s) {
  std::map<std::string, std::string> m;
  std::map<std::string, size_t> cats;
  __int128 ts_sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    cats[category_name(s.cat[i])]++;
    ts_sum += s.ts_ns[i];
  }
  m["events"] = std::to_string(s.size());
  for (auto& [k, v] : cats) m["cat " + k] = std::to_string(v);
  m["ts_ns_sum"] = to_string_i128(ts_sum);
  if (s.meta.format != TraceFormat::BareArray) m["baseTimeNanoseconds"] = std::to_string(s.meta.base_time_ns);
  return m;
}

size_t find_event(const EventStore& s, std::string_view name, Category c) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s.cat[i] == c && s.name_of(i) == name) return i;
  return SIZE_MAX;
}

void expect_identical(const EventStore& a, const EventStore& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.name, b.name);
  EXPECT_TRUE(a.cat == b.cat);
  EXPECT_TRUE(a.ph == b.ph);
  EXPECT_EQ(a.thread, b.thread);
  EXPECT_TRUE(a.threads == b.threads);  // the same pairs, in the same order of first use
  EXPECT_EQ(a.ts_ns, b.ts_ns);
  EXPECT_EQ(a.dur_ns, b.dur_ns);
  EXPECT_EQ(a.correlation, b.correlation);
  EXPECT_EQ(a.external_id, b.external_id);
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.input_dims, b.input_dims);
  EXPECT_EQ(a.input_types, b.input_types);
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (uint32_t i = 0; i < a.strings.size(); ++i) ASSERT_EQ(a.strings.view(i), b.strings.view(i)) << "string " << i;
  ASSERT_EQ(a.args_table.size(), b.args_table.size());
  for (size_t i = 0; i < a.args_table.size(); ++i) {
    const EventArgs &x = a.args_table[i], &y = b.args_table[i];
    ASSERT_TRUE(std::memcmp(x.grid, y.grid, sizeof x.grid) == 0 && std::memcmp(x.block, y.block, sizeof x.block) == 0 &&
                x.registers_per_thread == y.registers_per_thread && x.shared_memory == y.shared_memory &&
                x.blocks_per_sm == y.blocks_per_sm && x.warps_per_sm == y.warps_per_sm &&
                x.occupancy_pct == y.occupancy_pct && x.bytes == y.bytes && x.total_allocated == y.total_allocated &&
                x.total_reserved == y.total_reserved && x.device_type == y.device_type &&
                x.device_id == y.device_id && x.bandwidth_gbps == y.bandwidth_gbps)
        << "args " << i;
    ASSERT_EQ(x.comm, y.comm) << "args " << i;
  }
  ASSERT_EQ(a.comm_args.size(), b.comm_args.size());
  for (size_t i = 0; i < a.comm_args.size(); ++i) {
    const CommArgs &x = a.comm_args[i], &y = b.comm_args[i];
    ASSERT_TRUE(x.collective == y.collective && x.dtype == y.dtype && x.group_name == y.group_name &&
                x.group_ranks == y.group_ranks && x.in_nelems == y.in_nelems && x.out_nelems == y.out_nelems &&
                x.group_size == y.group_size)
        << "comm args " << i;
  }
  auto same_names = [](const std::vector<EventStore::NameEntry>& x, const std::vector<EventStore::NameEntry>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].pid != y[i].pid || x[i].tid != y[i].tid || x[i].name != y[i].name) return false;
    return true;
  };
  EXPECT_TRUE(same_names(a.process_names, b.process_names));
  EXPECT_TRUE(same_names(a.thread_names, b.thread_names));
  EXPECT_EQ(a.meta.format, b.meta.format);
  EXPECT_EQ(a.meta.schema_version, b.meta.schema_version);
  EXPECT_EQ(a.meta.base_time_ns, b.meta.base_time_ns);
  EXPECT_EQ(a.meta.devices.size(), b.meta.devices.size());
  EXPECT_EQ(a.meta.distributed.rank, b.meta.distributed.rank);
  EXPECT_EQ(a.meta.is_rocm, b.meta.is_rocm);
  EXPECT_EQ(a.meta.cuda_runtime_version, b.meta.cuda_runtime_version);
  EXPECT_EQ(a.meta.input_bytes, b.meta.input_bytes);
}


}  // namespace ts::trace::test
