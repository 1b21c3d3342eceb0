// `trainscope analyze` on every trace listed in tests/data/expected_findings.tsv must put the
// expected finding first ("none": no finding at all; "not:ID": ID must be absent; "ID+OTHER": ID
// first and OTHER among the findings, e.g. a host-bound trace whose planted problem is smaller;
// "has:ID": ID must be among the findings, for a GPU trace whose run put its planted finding first
// with the agent's measurements beside the trace, while the trace alone ranks it lower). Each
// expectation comes from outside the program: the public source that
// recorded the trace says what is wrong with it, or (tests/data/gpu/, imported by scripts/gpu-report
// from a GPU run of scripts/gpu-check) the example that recorded it was written to plant that one
// problem ("none": healthy.py plants nothing). A row whose cuda_sync column says "yes" also needs
// Kineto's cuda_sync events in the trace: the agent asks for them on PyTorch >= 2.1, and only a GPU
// run can show they arrive.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "support/environment_findings.h"
#include "support/shell.h"
#include "trace/reader.h"

namespace fs = std::filesystem;

namespace {

const std::string kDataDir = TS_TEST_DATA;
const std::string kManifest = kDataDir + "/expected_findings.tsv";
const std::set<std::string>& kEnvironment = ts::test::kEnvironmentFindings;

struct Row {
  std::string file, expected, source;
  bool cuda_sync = false;
};

// ctest lists each case by its trace, not by the bytes of the row.
void PrintTo(const Row& r, std::ostream* os) { *os << r.file << " -> " << r.expected; }

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cols;
  std::stringstream ss(line);
  std::string c;
  while (std::getline(ss, c, '\t')) cols.push_back(c);
  return cols;
}

std::vector<Row> manifest() {
  std::vector<Row> rows;
  std::ifstream f(kManifest);
  std::string line;
  bool header = true;
  while (std::getline(f, line)) {
    if (header) {
      header = false;
      continue;
    }
    if (line.empty()) continue;
    auto c = split_tabs(line);
    Row r;
    r.file = c.size() > 0 ? c[0] : "";
    r.expected = c.size() > 1 ? c[1] : "";
    r.cuda_sync = c.size() > 2 && c[2] == "yes";
    r.source = c.size() > 3 ? c[3] : "";
    rows.push_back(r);
  }
  return rows;
}

std::string test_name(const ::testing::TestParamInfo<Row>& info) {
  std::string n = fs::path(info.param.file).filename().string();
  n = n.substr(0, n.find('.'));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return fmt::format("{}_{}", info.index, n);
}

class ExpectedFinding : public ::testing::TestWithParam<Row> {};

TEST_P(ExpectedFinding, AnalyzePutsItFirst) {
  const Row& row = GetParam();
  ASSERT_FALSE(row.source.empty()) << row.file << ": every expectation names where it comes from";
  std::string path = kDataDir + "/" + row.file;
  ASSERT_TRUE(fs::exists(path)) << path;
  std::string err = (fs::temp_directory_path() / fmt::format("ts_expected_{}.err", getpid())).string();
  auto r = ts::test::run_capture(fmt::format("{} analyze --json '{}'", TS_CLI, path), err);
  fs::remove(err);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  std::vector<std::string> problems;
  for (auto f : doc["findings"].get_array()) {
    std::string id{std::string_view(f["id"])};
    if (!kEnvironment.count(id)) problems.push_back(id);
  }
  if (row.expected.starts_with("not:")) {
    std::string absent = row.expected.substr(4);
    for (const auto& id : problems) EXPECT_NE(id, absent) << row.file << " (" << row.source << ")";
  } else if (row.expected.starts_with("has:")) {
    std::string wanted = row.expected.substr(4), found;
    for (const auto& id : problems) found += (found.empty() ? "" : ", ") + id;
    EXPECT_NE(std::find(problems.begin(), problems.end(), wanted), problems.end())
        << row.file << ": " << wanted << " not among [" << found << "] (" << row.source << ")";
  } else {
    std::vector<std::string> want;
    std::stringstream ss(row.expected);
    for (std::string id; std::getline(ss, id, '+');) want.push_back(id);
    EXPECT_EQ(problems.empty() ? "none" : problems.front(), want.front()) << row.file << " (" << row.source << ")";
    for (size_t i = 1; i < want.size(); ++i)
      EXPECT_NE(std::find(problems.begin(), problems.end(), want[i]), problems.end())
          << row.file << ": " << want[i] << " missing (" << row.source << ")";
  }
  if (row.cuda_sync) {
    ts::trace::EventStore s = ts::trace::read_trace(path);
    size_t n = 0;
    for (auto c : s.cat) n += c == ts::trace::Category::CudaSync;
    EXPECT_GT(n, 0u) << row.file << ": no cuda_sync events";
  }
}

// One account of the step (docs/FINDINGS.md): on every listed trace the findings' claims, in
// milliseconds per step, add up to no more than the step, and each is on the step's scale.
TEST_P(ExpectedFinding, ClaimsFitInTheStep) {
  const Row& row = GetParam();
  std::string path = kDataDir + "/" + row.file;
  std::string err = (fs::temp_directory_path() / fmt::format("ts_claims_{}.err", getpid())).string();
  auto r = ts::test::run_capture(fmt::format("{} analyze --json '{}'", TS_CLI, path), err);
  fs::remove(err);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  double share = 0, ms = 0, step = -1;
  for (auto f : doc["findings"].get_array()) {
    double frac = double(f["recoverable_fraction"]);
    EXPECT_GE(frac, 0) << row.file;
    share += frac;
    double claimed = 0, s = 0;
    if (f["claimed_ms_per_step"].get(claimed) == simdjson::SUCCESS && f["step_ms"].get(s) == simdjson::SUCCESS) {
      ms += claimed;
      step = s;
      EXPECT_NEAR(claimed, frac * s, 1e-6 * s) << row.file << " " << std::string_view(f["id"]);
    }
  }
  EXPECT_LE(share, 1 + 1e-9) << row.file;
  if (step > 0) {
    EXPECT_LE(ms, step * (1 + 1e-9)) << row.file;
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, ExpectedFinding, ::testing::ValuesIn(manifest()), test_name);

// The manifest and the folder of imported GPU traces agree: no row without its file, no imported
// trace without its row (an orphan would never be checked).
TEST(ExpectedFindings, ManifestCoversEveryImportedTrace) {
  auto rows = manifest();
  ASSERT_FALSE(rows.empty()) << kManifest;
  std::set<std::string> listed;
  for (const auto& r : rows) {
    EXPECT_TRUE(fs::exists(kDataDir + "/" + r.file)) << r.file;
    EXPECT_TRUE(listed.insert(r.file).second) << "listed twice: " << r.file;
  }
  if (fs::exists(kDataDir + "/gpu")) {
    for (const auto& e : fs::directory_iterator(kDataDir + "/gpu")) {
      EXPECT_TRUE(listed.count("gpu/" + e.path().filename().string())) << e.path() << " has no row";
    }
  }
}

}  // namespace
