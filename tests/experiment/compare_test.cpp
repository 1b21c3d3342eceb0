// compare on the two real ResNet-50 traces (TensorBoard plugin's samples: num_workers 0, then 4) and on
// run reports. The DataLoader share and the step counts are recomputed here from the raw JSON with
// Python's stdlib, independently of the trace reader and the analyses.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <simdjson.h>

#include "experiment/compare.h"
#include "util/error.h"

using namespace ts::experiment;
namespace fs = std::filesystem;

static std::string fixture(const char* prefix) {
  for (auto& e : fs::directory_iterator(TS_TEST_DATA))
    if (e.path().filename().string().rfind(prefix, 0) == 0) return e.path().string();
  return "";
}

static std::string sh(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  std::string out;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  pclose(f);
  return out;
}

// Raw numbers: ProfilerStep# count, and enumerate(DataLoader) host time as a share of ProfilerStep time.
static std::pair<int, double> raw_dataloader_share(const std::string& path) {
  std::string py =
      "import gzip, json, sys\n"
      "d = json.load(gzip.open(sys.argv[1])); ev = d['traceEvents'] if isinstance(d, dict) else d\n"
      "st = [e for e in ev if e.get('ph') == 'X' and e.get('name', '').startswith('ProfilerStep#')]\n"
      "dl = [e for e in ev if e.get('ph') == 'X' and e.get('name', '').startswith('enumerate(DataLoader)')]\n"
      "print(len(st), 100.0 * sum(e['dur'] for e in dl) / sum(e['dur'] for e in st))\n";
  std::string out = sh("/usr/bin/python3 - '" + path + "' 2>/dev/null <<'EOF'\n" + py + "EOF\n");
  int n = 0;
  double pct = -1;
  std::sscanf(out.c_str(), "%d %lf", &n, &pct);
  return {n, pct};
}

static const CompareClassRow* row(const CompareResult& r, const std::string& name) {
  for (auto& c : r.classes)
    if (c.name == name) return &c;
  return nullptr;
}

static bool has_id(const std::vector<CompareFinding>& v, const std::string& id) {
  for (auto& f : v)
    if (f.id == id) return true;
  return false;
}

TEST(Compare, ResNet50NumWorkers0To4) {
  std::string a = fixture("tb_resnet50_num_workers_0_"), b = fixture("tb_resnet50_num_workers_4_");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  auto raw_a = raw_dataloader_share(a), raw_b = raw_dataloader_share(b);
  ASSERT_GT(raw_a.first, 0) << "python3 could not read the fixture";
  // The issue's numbers: about 40% of the step in the DataLoader before, about 1% after.
  EXPECT_NEAR(raw_a.second, 40, 2);
  EXPECT_NEAR(raw_b.second, 1, 0.5);

  CompareResult r = compare_sides(load_side(a, false), load_side(b, false));
  EXPECT_EQ(r.a.kind, "trace");
  EXPECT_EQ(r.a.steps, raw_a.first);
  EXPECT_EQ(r.b.steps, raw_b.first);
  const auto* dl = row(r, "dataloader");
  ASSERT_NE(dl, nullptr);
  // The breakdown gives each ns to one class by priority (GPU work first), so the DataLoader class is
  // at most the raw enumerate() time and most of it when nothing else runs.
  EXPECT_LE(dl->a_pct, raw_a.second + 0.5);
  EXPECT_GE(dl->a_pct, 0.75 * raw_a.second);
  EXPECT_LE(dl->b_pct, raw_b.second + 0.5);
  EXPECT_LT(dl->b_pct, 2);
  EXPECT_NEAR(dl->a_ms, r.a.step_ms * dl->a_pct / 100, 0.1 * dl->a_ms);  // ms per step agrees with its share
  EXPECT_LT(r.step_change_pct, -15);  // fewer stalls: a faster step
  EXPECT_NEAR(r.speedup, r.a.step_ms / r.b.step_ms, 1e-12);
  EXPECT_NEAR(r.step_change_pct, 100 * (r.b.step_ms - r.a.step_ms) / r.a.step_ms, 1e-9);

  EXPECT_TRUE(has_id(r.a.findings, "dataloader-starvation"));
  EXPECT_FALSE(has_id(r.b.findings, "dataloader-starvation"));
  EXPECT_TRUE(has_id(r.resolved, "dataloader-starvation"));
  EXPECT_FALSE(has_id(r.added, "dataloader-starvation"));

  ASSERT_FALSE(r.kernels.empty());
  for (size_t i = 1; i < r.kernels.size(); ++i)
    EXPECT_GE(std::abs(r.kernels[i - 1].b.ms_per_step - r.kernels[i - 1].a.ms_per_step),
              std::abs(r.kernels[i].b.ms_per_step - r.kernels[i].a.ms_per_step));
  std::string text = compare_text(r);
  EXPECT_NE(text.find("resolved  dataloader-starvation"), std::string::npos) << text;
}

static std::string write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
  return p.string();
}

TEST(Compare, RunReportsBothSchemas) {
  fs::path dir = fs::temp_directory_path() / ("ts_compare_" + std::to_string(getpid()));
  // The run layer's own report.json (no report layer): agent summary and diagnosis.findings.
  std::string a = write(dir / "before" / "report.json",
                        R"({"kind": "run", "run": {"agent": {"steps": 120, "summary": {"step_ms": 45.0, "gpu_ms": 20.0,
                           "data_wait_pct": 55.6}}}, "diagnosis": {"findings": [
                           {"id": "dataloader-starvation", "title": "GPU waiting for data", "severity": "high",
                            "recoverable_fraction": 0.55},
                           {"id": "host-sync", "title": "syncs", "severity": "low", "recoverable_fraction": 0.02}]}})");
  // The report layer's schema with a trace section.
  std::string b = write(dir / "after.json",
                        R"({"schema": "trainscope.report/1", "findings": [
                           {"id": "host-sync", "title": "syncs", "severity": "low", "recoverable_fraction": 0.02},
                           {"id": "launch-bound", "title": "tiny kernels", "severity": "medium", "recoverable_fraction": 0.1}],
                           "traces": [{"device_name": "H100", "steps": {"count": 4, "median_ms": 20.0},
                             "step_breakdown_ms": {"kernel": 60, "memcpy": 4, "memset": 0, "communication": 0,
                               "runtime": 8, "dataloader": 4, "cpu_exec": 4, "other": 0},
                             "step_breakdown_pct": {"kernel": 75, "memcpy": 5, "memset": 0, "communication": 0,
                               "runtime": 10, "dataloader": 5, "cpu_exec": 5, "other": 0},
                             "gpu": {"present": true, "idle_pct": 12.5},
                             "kernels": {"top": [{"name": "gemm", "count": 8, "total_ms": 40}]}}],
                           "agent": {"step_ms": 21.0, "data_wait_pct": 2.0}})");
  CompareResult r = compare_sides(load_side((dir / "before").string(), false), load_side(b, false));
  EXPECT_EQ(r.a.kind, "run");
  EXPECT_EQ(r.a.steps, 120);
  EXPECT_DOUBLE_EQ(r.a.step_ms, 45);
  EXPECT_DOUBLE_EQ(r.b.step_ms, 20);  // the trace's median wins over the agent's
  EXPECT_NEAR(r.step_change_pct, 100.0 * (20 - 45) / 45, 1e-9);
  EXPECT_DOUBLE_EQ(r.b.data_wait_pct, 2);
  EXPECT_DOUBLE_EQ(r.a.gpu_ms, 20);  // what `loader --from-run` takes as the GPU step
  EXPECT_DOUBLE_EQ(r.b.gpu_ms, -1);
  EXPECT_DOUBLE_EQ(r.b.gpu_idle_pct, 12.5);
  EXPECT_TRUE(r.classes.empty());  // only one side has a breakdown
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(r.kernels[0].b.count_per_step, 2);
  EXPECT_DOUBLE_EQ(r.kernels[0].b.ms_per_step, 10);
  EXPECT_TRUE(has_id(r.resolved, "dataloader-starvation"));
  EXPECT_TRUE(has_id(r.added, "launch-bound"));
  EXPECT_TRUE(has_id(r.kept, "host-sync"));

  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_FALSE(p.parse(compare_json(r)).get(doc));
  EXPECT_EQ(std::string_view(doc["resolved"].at(0)["id"]), "dataloader-starvation");

  // Bad input: one line naming the file.
  EXPECT_THROW(load_side((dir / "missing").string(), false), ts::UserError);
  std::string junk = write(dir / "junk" / "report.json", R"({"kind": "run", "nothing": 1})");
  try {
    load_side((dir / "junk").string(), false);
    FAIL();
  } catch (const ts::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json"), std::string::npos) << e.what();
  }
  std::string broken = write(dir / "broken" / "report.json", "{\"kind\": \"run\", ");
  EXPECT_THROW(load_side((dir / "broken").string(), false), ts::UserError);
  fs::remove_all(dir);
}

TEST(Compare, TheWholeRunBucketByBucket) {
  // Two runs' accounts: a compile cache that took the compilation away and left the steps as they were.
  fs::path dir = fs::temp_directory_path() / ("ts_compare_acc_" + std::to_string(getpid()));
  auto run = [&](const char* name, double compile) {
    const double total = 4 + compile + 12 + 1;
    return write(dir / name / "report.json",
                 fmt::format(R"({{"kind": "run", "run": {{"agent": {{"steps": 100, "summary": {{"step_ms": 120.0}}}},
                    "time_account": {{"total_s": {}, "before_first_step_s": 4, "compile_s": {}, "train_steps_s": 12,
                    "data_wait_s": 0, "eval_s": 0, "checkpoint_s": 0, "other_s": 1, "goodput_pct": {}}}}}}})",
                             total, compile, 100 * 12 / total));
  };
  CompareResult r = compare_sides(load_side(run("cold", 40), false), load_side(run("warm", 2), false));
  ASSERT_EQ(r.a.account.size(), 9u);
  const std::string text = compare_text(r);
  EXPECT_NE(text.find("the whole run"), std::string::npos) << text;
  EXPECT_NE(text.find("compile s"), std::string::npos) << text;
  EXPECT_NE(text.find("-38.0"), std::string::npos) << text;  // 40 -> 2 s
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_FALSE(p.parse(compare_json(r)).get(doc));
  EXPECT_DOUBLE_EQ(double(doc["b"]["time_account"]["compile_s"]), 2.0);
  EXPECT_TRUE(doc["a"]["time_account"]["goodput_pct"].is_double());
  fs::remove_all(dir);
}

TEST(Compare, CliJsonOnTraces) {
  std::string out = sh(std::string(TS_CLI) + " compare --json " + fixture("tb_resnet50_num_workers_0_") + " " +
                       fixture("tb_resnet50_num_workers_4_") + " 2>/dev/null");
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_FALSE(p.parse(out).get(doc)) << out;
  EXPECT_EQ(std::string_view(doc["kind"]), "compare");
  bool found = false;
  for (auto f : doc["resolved"].get_array()) found |= std::string_view(f["id"]) == "dataloader-starvation";
  EXPECT_TRUE(found) << out;
  std::string err = sh(std::string(TS_CLI) + " compare /nonexistent.json.gz " + fixture("tb_resnet50_num_workers_4_") +
                       " 2>&1 >/dev/null");
  EXPECT_NE(err.find("/nonexistent.json.gz"), std::string::npos) << err;
}
