// `trainscope runs` and `report ID` over everything the store holds: one real run, lab,
// loader sweep, max-batch search and watch recording, in a store of the test's own
// (TRAINSCOPE_HOME). Each kind is listed with its KIND, --kind filters, --json carries kind,
// and `report ID` shows each kind's outcome with the numbers its stored JSON holds.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "support/shell.h"
#include "support/torch_python.h"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CommandResult;


class RunsKinds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!ts::test::system_python_has_torch()) return;
    home_ = fs::temp_directory_path() / fmt::format("ts_runs_kinds_{}", getpid());
    fs::remove_all(home_);
    fs::create_directories(home_);
    std::string target = std::string(TS_SOURCE_DIR) + "/examples/lab/tiny_convnet.py";
    // Oldest first: ids 1..5 in this order.
    ASSERT_EQ(cli(fmt::format("max-batch {}:wide_activations --memory-limit 128MiB --python /usr/bin/python3", target)).code, 0);
    ASSERT_EQ(cli(fmt::format("lab {}:factory --configs fp32 --steps 3 --warmup 1 --python /usr/bin/python3", target)).code, 0);
    ASSERT_EQ(cli(fmt::format("loader {}:factory --workers 0,1 --batches 5 --epochs 1 --no-persistent --python /usr/bin/python3", target)).code, 0);
    ASSERT_EQ(cli("watch --duration 1 --plain").code, 0);
    Result r = cli(fmt::format("run --no-profile --out {} -- /usr/bin/python3 {}/examples/healthy.py", (home_ / "run").string(), TS_SOURCE_DIR));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!home_.empty()) fs::remove_all(home_, ec);
  }
  void SetUp() override {
    if (!ts::test::system_python_has_torch()) GTEST_FAIL() << "needs /usr/bin/python3 with torch";
  }
  static Result cli(const std::string& args) {
    return ts::test::run_capture(
        fmt::format("TRAINSCOPE_HOME={} timeout 300 {} -q {} < /dev/null", home_.string(), TS_CLI, args),
        (home_ / "stderr.txt").string());
  }
  simdjson::dom::element stored(int id) {
    Result r = cli(fmt::format("report {} --json", id));
    EXPECT_EQ(r.code, 0) << r.err;
    docs_.push_back(r.out);
    return parser_.parse(docs_.back());
  }
  static inline fs::path home_;
  std::vector<std::string> docs_;
  simdjson::dom::parser parser_;
};

}  // namespace

TEST_F(RunsKinds, ListsEveryKindNewestFirst) {
  Result r = cli("runs");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_NE(header.find("kind"), std::string::npos) << header;
  std::vector<std::pair<int, std::string>> rows;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    int id;
    std::string kind;
    f >> id >> kind;
    rows.emplace_back(id, kind);
  }
  std::vector<std::pair<int, std::string>> want = {{5, "run"}, {4, "watch"}, {3, "loader"}, {2, "lab"}, {1, "max-batch"}};
  EXPECT_EQ(rows, want) << r.out;
  // On an 80-column terminal every row fits (the command and verdict columns shrink).
  setenv("COLUMNS", "80", 1);
  Result narrow = cli("runs");
  unsetenv("COLUMNS");
  std::istringstream nl(narrow.out);
  int rows80 = 0;
  while (std::getline(nl, line)) {
    EXPECT_LE(line.size(), 80u) << line;  // ASCII only: bytes are columns
    ++rows80;
  }
  EXPECT_EQ(rows80, 6);
  // -n counts entries of every kind.
  Result two = cli("runs -n 2");
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 3) << two.out;
}

TEST_F(RunsKinds, KindFilterAndJsonCarryKind) {
  Result r = cli("runs --json");
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::array all = parser_.parse(r.out);
  ASSERT_EQ(all.size(), 5u);
  std::map<std::string, int64_t> ids;
  for (auto e : all) ids[std::string(std::string_view(e["kind"]))] = int64_t(e["id"]);
  EXPECT_EQ(ids, (std::map<std::string, int64_t>{{"run", 5}, {"watch", 4}, {"loader", 3}, {"lab", 2}, {"max-batch", 1}}));
  for (const char* kind : {"run", "lab", "loader", "max-batch", "watch"}) {
    Result k = cli(fmt::format("runs --kind {} --json", kind));
    ASSERT_EQ(k.code, 0) << k.err;
    simdjson::dom::parser p;
    simdjson::dom::array one = p.parse(k.out);
    ASSERT_EQ(one.size(), 1u) << kind;
    EXPECT_EQ(std::string_view(one.at(0)["kind"]), kind);
    Result t = cli(fmt::format("runs --kind {}", kind));
    EXPECT_EQ(std::count(t.out.begin(), t.out.end(), '\n'), 2) << t.out;  // header + one row
  }
}

TEST_F(RunsKinds, ReportShowsEachKindWithItsNumbers) {
  // run: its report.txt, whose verdict is the stored report's, and the agent's numbers only in run.agent.
  auto run = stored(5);
  Result r = cli("report 5");
  EXPECT_NE(r.out.find(std::string(std::string_view(run["verdict"]))), std::string::npos) << r.out;
  EXPECT_EQ(run["agent"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_GT(double(run["run"]["agent"]["summary"]["step_ms"]), 0);

  // lab: the fastest configuration and its samples/s, as stored.
  auto lab = stored(2);
  auto c0 = lab["configs"].at(0);
  r = cli("report 2");
  EXPECT_EQ(r.out.rfind("lab 2: trainscope lab ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(fmt::format("fp32: {:.1f} samples/s", double(c0["samples_per_s"]))), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("report 2 --json"), std::string::npos);

  // loader: the recommended point's setting and rate, and why.
  auto loader = stored(3);
  int64_t rec = loader["recommended"];
  auto p = loader["points"].at(size_t(rec));
  r = cli("report 3");
  EXPECT_NE(r.out.find(fmt::format("recommended: num_workers={}, ", int64_t(p["num_workers"]))), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("({:.1f} batches/s)", double(p["batches_per_s"]))), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why: " + std::string(std::string_view(loader["why"]))), std::string::npos) << r.out;

  // max-batch: the largest batch that fit and the recommended one.
  auto mb = stored(1);
  r = cli("report 1");
  EXPECT_NE(r.out.find(fmt::format("largest batch that fits: {}; recommended: {}", int64_t(mb["max_batch"]),
                                   int64_t(mb["recommended_batch"]))),
            std::string::npos)
      << r.out;

  // watch: what the recording holds (1 s at 100 ms: about 10 host samples), and that it has no report.
  auto w = stored(4);
  EXPECT_EQ(std::string_view(w["kind"]), "watch");
  EXPECT_GE(int64_t(w["samples"]["host"]), 5);
  r = cli("report 4");
  EXPECT_NE(r.out.find(fmt::format("{} host", int64_t(w["samples"]["host"]))), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no report to show"), std::string::npos) << r.out;

  // --html is a run's page: for an experiment, one line saying so.
  r = cli("report 2 --html");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("a lab result has no HTML report"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(cli("report 5 --html").code, 0);
}
