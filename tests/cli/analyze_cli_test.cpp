// `trainscope analyze` end to end on the real fixtures: the findings each trace must (and must
// not) get, the --json schema keys, report files, and one-line errors with a non-zero exit.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>

#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

const std::string kData = TS_TEST_DATA;
const std::string kStarved = kData + "/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
const std::string kHealthy = kData + "/tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz";

using Result = ts::test::CommandResult;

class AnalyzeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("ts_analyze_cli_{}_{}", getpid(), counter_++);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result run(const std::string& args) {
    return ts::test::run_capture(fmt::format("{} {}", TS_CLI, args), (dir_ / "stderr.txt").string());
  }
  std::set<std::string> finding_ids(simdjson::dom::element doc) {
    std::set<std::string> ids;
    for (auto f : doc["findings"].get_array()) ids.insert(std::string(std::string_view(f["id"])));
    return ids;
  }
  fs::path dir_;
  static inline int counter_ = 0;
  simdjson::dom::parser parser_;
};

}  // namespace

TEST_F(AnalyzeCli, StarvedResNetGetsDataloaderStarvationFirst) {
  Result r = run("analyze --json " + kStarved);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto f0 = doc["findings"].at(0);
  EXPECT_EQ(std::string_view(f0["id"]), "dataloader-starvation");
  EXPECT_EQ(std::string_view(f0["severity"]), "high");
  EXPECT_NE(std::string_view(f0["fix_code"]).find("num_workers="), std::string_view::npos);
  auto t = doc["traces"].at(0);
  double dl = t["step_breakdown_pct"]["dataloader"];
  EXPECT_GT(dl, 25);  // the TB plugin shows about 40% for this run
  EXPECT_LT(dl, 45);
  EXPECT_NE(std::string_view(doc["verdict"]).find("waiting for data"), std::string_view::npos);
  // The findings that are true of this run and nothing a starved ResNet-50 cannot have.
  for (const auto& id : finding_ids(doc))
    EXPECT_TRUE((std::set<std::string>{"dataloader-starvation", "fp32-gemm", "unfused-optimizer", "pageable-memcpy"}).count(id))
        << "unexpected finding " << id;
}

TEST_F(AnalyzeCli, HealthyResNetHasNoFalseAlarm) {
  Result r = run("analyze --json " + kHealthy);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto ids = finding_ids(doc);
  EXPECT_FALSE(ids.count("dataloader-starvation"));
  // Only what is true of this run: fp32 convolutions on a V100 (AMP), single-tensor SGD, the
  // pageable input copies (pin_memory off). No data, sync, launch, memory or device alarm.
  for (const auto& id : ids)
    EXPECT_TRUE((std::set<std::string>{"fp32-gemm", "unfused-optimizer", "pageable-memcpy", "compute-bound"}).count(id))
        << "false alarm " << id;
  EXPECT_LT(double(doc["traces"].at(0)["step_breakdown_pct"]["dataloader"]), 5);
  EXPECT_EQ(std::string_view(doc["scenario"]["id"]), "large-model-simple-data");
}

TEST_F(AnalyzeCli, JsonSchemaKeys) {
  Result r = run("analyze --json " + kStarved);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  EXPECT_EQ(std::string_view(doc["schema"]), "trainscope.report/2");
  auto t = doc["traces"].at(0);
  double sum = 0;
  for (const char* k : {"kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"}) {
    double v = 0;
    ASSERT_EQ(t["step_breakdown_pct"][k].get(v), simdjson::SUCCESS) << k;
    sum += v;
  }
  EXPECT_NEAR(sum, 100, 0.01);
  for (const char* k : {"idle_pct", "compute_pct"}) EXPECT_EQ(t["gpu"][k].error(), simdjson::SUCCESS) << k;
  for (const char* k : {"syncs", "memcpy", "memory", "kernels", "steps", "precision", "parallel"})
    EXPECT_EQ(t[k].error(), simdjson::SUCCESS) << k;
  EXPECT_EQ(t["kernels"]["top"].error(), simdjson::SUCCESS);
  for (auto f : doc["findings"].get_array())
    for (const char* k : {"id", "severity", "evidence", "fix", "fix_code", "confidence", "gain", "recoverable_fraction"})
      EXPECT_EQ(f[k].error(), simdjson::SUCCESS) << k;
}

TEST_F(AnalyzeCli, TextReportPlainWhenPiped) {
  Result r = run("analyze " + kStarved);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("VERDICT"), 1u);
  EXPECT_EQ(r.out.find("\033["), std::string::npos);
  EXPECT_NE(r.out.find("dataloader-starvation"), std::string::npos);
  EXPECT_NE(r.out.find("Step time breakdown"), std::string::npos);
}

TEST_F(AnalyzeCli, DirectoryOfRanksAndReportFiles) {
  fs::create_directories(dir_ / "ranks");
  // Named as trainscope run names per-rank traces: the file names make them ranks of one job.
  fs::copy_file(kStarved, dir_ / "ranks" / "trace_rank0.pt.trace.json.gz");
  fs::copy_file(kHealthy, dir_ / "ranks" / "trace_rank1.pt.trace.json.gz");
  std::string md = (dir_ / "r.md").string(), html = (dir_ / "r.html").string();
  Result r = run(fmt::format("analyze --json --md {} --html {} {}", md, html, (dir_ / "ranks").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  EXPECT_EQ(doc["traces"].get_array().size(), 2u);
  EXPECT_EQ(doc["ranks"].get_array().size(), 2u);
  bool found = false;
  for (auto f : doc["findings"].get_array())
    if (std::string_view(f["id"]) == "dataloader-starvation") {
      found = true;
      EXPECT_NE(std::string_view(f["source"]).find("rank 0"), std::string_view::npos);  // only the starved one
      EXPECT_EQ(std::string_view(f["source"]).find("rank 1"), std::string_view::npos);
    }
  EXPECT_TRUE(found);
  std::string m = ts::test::read_file(md), h = ts::test::read_file(html);
  EXPECT_EQ(m.rfind("# trainscope report", 0), 0u);
  EXPECT_NE(h.find("data-chart=\"step-bars\""), std::string::npos);
  EXPECT_NE(h.find("data-chart=\"ranks\""), std::string::npos);
}

// Two runs of a script (before/after), with no rank in their names or their distributedInfo and
// recorded on different days: compared side by side, never as ranks (no straggler, no rank table).
TEST_F(AnalyzeCli, SeparateRunsAreNotRanks) {
  Result r = run(fmt::format("analyze --json {} {}", kStarved, kHealthy));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("recorded at different times"), std::string::npos) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  EXPECT_EQ(doc["traces"].get_array().size(), 2u);
  EXPECT_EQ(doc["ranks"].get_array().size(), 0u);
  EXPECT_FALSE(bool(doc["traces_relation"]["one_job"]));
  bool starved = false;
  for (auto f : doc["findings"].get_array()) {
    EXPECT_NE(std::string_view(f["id"]), "straggler-rank");
    if (std::string_view(f["id"]) == "dataloader-starvation") {
      starved = true;
      // Labelled by its file, not by a rank it never had.
      EXPECT_NE(std::string_view(f["source"]).find(fs::path(kStarved).filename().string()), std::string_view::npos);
      EXPECT_EQ(std::string_view(f["source"]).find("rank"), std::string_view::npos);
    }
  }
  EXPECT_TRUE(starved);
}

TEST_F(AnalyzeCli, StepRange) {
  Result r = run("analyze --json --steps 2-3 " + kStarved);
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto items = doc["traces"].at(0)["steps"]["items"].get_array();
  EXPECT_LE(items.size(), 2u);
  for (auto s : items) {
    int64_t n = s["number"];
    EXPECT_GE(n, 2);
    EXPECT_LE(n, 3);
  }
}

TEST_F(AnalyzeCli, BadInputIsOneLineAndNonZero) {
  auto one_line = [](const Result& r) {
    return !r.err.empty() && r.err.find('\n') == r.err.size() - 1;
  };
  std::string missing = (dir_ / "nope.json").string();
  Result r = run("analyze " + missing);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  fs::path junk = dir_ / "junk.json";
  std::ofstream(junk) << "this is not a trace";
  r = run("analyze " + junk.string());
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("junk.json"), std::string::npos) << r.err;

  // A gzip cut in half.
  std::string gz = ts::test::read_file(kStarved);
  fs::path cut = dir_ / "cut.json.gz";
  std::ofstream(cut, std::ios::binary) << gz.substr(0, gz.size() / 2);
  r = run("analyze " + cut.string());
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("cut.json.gz"), std::string::npos) << r.err;

  fs::create_directories(dir_ / "empty");
  r = run("analyze " + (dir_ / "empty").string());
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(one_line(r)) << r.err;

  r = run("analyze --steps 5-2 " + kStarved);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(one_line(r)) << r.err;
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;

  r = run("analyze --html /nonexistent-dir/x.html " + kStarved);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("/nonexistent-dir/x.html"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCli, HelpDescribesOptions) {
  Result r = run("analyze --help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--json", "--md", "--html", "--steps", "--top"}) EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}
