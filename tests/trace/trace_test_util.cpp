#include "trace/trace_test_util.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ts::trace::test {

std::string data_path(const std::string& name) { return std::string(TS_TEST_DATA) + "/" + name; }

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

std::string temp_dir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/ts_trace_test.XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    return std::string(d);
  }();
  return dir;
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

}  // namespace ts::trace::test
