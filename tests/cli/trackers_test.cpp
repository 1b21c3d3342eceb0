// `trainscope run --mlflow --wandb` on a real PyTorch loop, read back with the real packages
// (tests/cli/scripts/read_trackers.py: MLflow's client on the local file store, W&B's offline
// transaction log): what each tracker holds must be the run's report.json (its numbers and its
// findings), read here on its own. The Python with mlflow and wandb is the test-only venv
// .venv-trackers (requirements/trackers.txt); without it these tests skip, saying so.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <string>

#include "support/shell.h"
#include "support/torch_python.h"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CommandResult;

const std::string kTrackersPython = TS_TRACKERS_PYTHON;

bool have_trackers() {
  return ts::test::has_torch(kTrackersPython) &&
         std::system(("'" + kTrackersPython + "' -c 'import mlflow, wandb' >/dev/null 2>&1").c_str()) == 0;
}

class Trackers : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() / fmt::format("ts_trackers_{}_{}", getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(home_, ec);
  }
  // In a clean tracker environment: no server, no project or run of the caller's.
  Result sh(const std::string& env, const std::string& cmd) {
    return ts::test::run_capture(
        fmt::format("cd {} && env -u MLFLOW_TRACKING_URI -u MLFLOW_RUN_ID -u MLFLOW_EXPERIMENT_NAME -u "
                    "MLFLOW_EXPERIMENT_ID -u WANDB_MODE -u WANDB_PROJECT -u WANDB_RUN_ID -u WANDB_DIR "
                    "TRAINSCOPE_HOME={} {} timeout 300 {} < /dev/null",
                    home_.string(), home_.string(), env, cmd),
        (home_ / "stderr.txt").string());
  }
  // The loop: 30 steps, each waiting 30 ms for its DataLoader (dataloader-starvation).
  Result run(const std::string& python, const std::string& flags, const std::string& env = "") {
    return sh(env, fmt::format("{} run --no-profile {} --out run -- {} {}/tests/cli/scripts/sleep_step.py 30 0 30", TS_CLI,
                               flags, python, TS_SOURCE_DIR));
  }
  simdjson::dom::element read_back(const std::string& which, const std::string& where) {
    Result r = sh("", fmt::format("{} {}/tests/cli/scripts/read_trackers.py {} {}", kTrackersPython, TS_SOURCE_DIR, which, where));
    EXPECT_EQ(r.code, 0) << r.err;
    back_ = r.out;
    simdjson::dom::element doc;
    EXPECT_FALSE(reader_.parse(back_).get(doc)) << r.out << r.err;
    return doc;
  }
  fs::path home_;
  simdjson::dom::parser report_parser_, reader_;
  std::string back_;
};

double num(simdjson::dom::element e) {
  double d;
  if (!e.get_double().get(d)) return d;
  int64_t i;
  if (!e.get_int64().get(i)) return static_cast<double>(i);
  return -1;
}

// The tracker's copy of one report number: the same value.
void expect_same(simdjson::dom::element logged, const char* key, double in_report) {
  simdjson::dom::element v;
  ASSERT_FALSE(logged[key].get(v)) << key << " not logged";
  EXPECT_NEAR(num(v), in_report, 1e-9 * std::max(1.0, std::abs(in_report))) << key;
}

}  // namespace

TEST_F(Trackers, MlflowAndWandbOfflineHoldTheReport) {
  if (!have_trackers()) GTEST_SKIP() << kTrackersPython << " has no torch + mlflow + wandb (requirements/trackers.txt)";
  Result r = run(kTrackersPython, "--mlflow --wandb");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("trainscope: mlflow: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" metrics and 1 findings logged into run "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trainscope: wandb (offline): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" metrics and 1 findings in run "), std::string::npos) << r.err;

  simdjson::dom::element rep = report_parser_.load((home_ / "run" / "report.json").string());
  simdjson::dom::element summary = rep["run"]["agent"]["summary"];
  const double step_ms = num(summary["step_ms"]), wait_pct = num(summary["data_wait_pct"]);
  const double steps = num(rep["run"]["agent"]["steps"]);
  simdjson::dom::array findings = rep["findings"];
  ASSERT_EQ(findings.size(), 1u);
  const std::string top(findings.at(0)["id"].get_string().value());
  EXPECT_EQ(top, "dataloader-starvation");  // what the loop plants
  const double recoverable = num(findings.at(0)["recoverable_fraction"]);

  // MLflow: one run in the local file store ./mlruns, named after the command, finished.
  simdjson::dom::element ml = read_back("mlflow", "file:" + (home_ / "mlruns").string());
  simdjson::dom::array runs = ml["runs"];
  ASSERT_EQ(runs.size(), 1u) << back_;
  simdjson::dom::element m = runs.at(0);
  EXPECT_EQ(std::string_view(m["status"].get_string().value()), "FINISHED");
  EXPECT_NE(std::string_view(m["name"].get_string().value()).find("sleep_step.py 30 0 30"), std::string::npos);
  expect_same(m["metrics"], "trainscope/step_ms", step_ms);
  expect_same(m["metrics"], "trainscope/data_wait_pct", wait_pct);
  expect_same(m["metrics"], "trainscope/steps", steps);
  expect_same(m["metrics"], "trainscope/findings_count", 1);
  expect_same(m["metrics"], "trainscope/recoverable_pct", 100 * recoverable);
  EXPECT_EQ(std::string_view(m["tags"]["trainscope/top_finding"].get_string().value()), top);
  EXPECT_EQ(std::string_view(m["tags"]["trainscope/verdict"].get_string().value()),
            std::string_view(rep["verdict"].get_string().value()));
  EXPECT_EQ(std::string_view(m["findings"].at(0)["id"].get_string().value()), top);
  EXPECT_NEAR(num(m["findings"].at(0)["recoverable_fraction"]), recoverable, 1e-12);
  bool has_report = false;
  for (auto a : m["artifacts"].get_array()) has_report = has_report || std::string_view(a.get_string().value()) == "trainscope/report.json";
  EXPECT_TRUE(has_report) << back_;

  // W&B: one offline run under ./wandb, project "trainscope", the same figures in its summary.
  simdjson::dom::element wb = read_back("wandb", home_.string());
  simdjson::dom::array wruns = wb["runs"];
  ASSERT_EQ(wruns.size(), 1u) << back_;
  simdjson::dom::element w = wruns.at(0);
  EXPECT_EQ(std::string_view(w["dir"].get_string().value()).rfind("offline-run-", 0), 0u);
  EXPECT_EQ(std::string_view(w["project"].get_string().value()), "trainscope");
  EXPECT_NE(std::string_view(w["config"]["trainscope/command"].get_string().value()).find("sleep_step.py"), std::string::npos);
  expect_same(w["summary"], "trainscope/step_ms", step_ms);
  expect_same(w["summary"], "trainscope/data_wait_pct", wait_pct);
  expect_same(w["summary"], "trainscope/steps", steps);
  EXPECT_EQ(std::string_view(w["summary"]["trainscope/top_finding"].get_string().value()), top);
  EXPECT_EQ(std::string_view(w["summary"]["trainscope/findings"].at(0)["id"].get_string().value()), top);
}

TEST_F(Trackers, MlflowRunIdAttachesToThatRun) {
  if (!have_trackers()) GTEST_SKIP() << kTrackersPython << " has no torch + mlflow + wandb (requirements/trackers.txt)";
  // A run someone started (as `mlflow run` or a CI step would), with a metric of its own.
  const std::string uri = "file:" + (home_ / "store").string();
  Result made = sh("MLFLOW_ALLOW_FILE_STORE=true",
                   fmt::format("{} -c \"import mlflow; mlflow.set_tracking_uri('{}'); r = mlflow.start_run(run_name='mine'); "
                               "mlflow.log_metric('accuracy', 0.5); mlflow.end_run(); print(r.info.run_id)\"",
                               kTrackersPython, uri));
  ASSERT_EQ(made.code, 0) << made.err;
  std::string id = made.out.substr(0, made.out.find('\n'));
  ASSERT_EQ(id.size(), 32u) << made.out;
  // A file store the user names needs MLflow 3's opt-in, as it would for their own script.
  Result r = run(kTrackersPython, "--mlflow",
                 fmt::format("MLFLOW_ALLOW_FILE_STORE=true MLFLOW_TRACKING_URI={} MLFLOW_RUN_ID={}", uri, id));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("logged into run " + id + " at " + uri), std::string::npos) << r.err;
  simdjson::dom::element ml = read_back("mlflow", uri);
  simdjson::dom::array runs = ml["runs"];
  ASSERT_EQ(runs.size(), 1u) << back_;  // no second run
  simdjson::dom::element m = runs.at(0);
  EXPECT_EQ(std::string_view(m["name"].get_string().value()), "mine");
  expect_same(m["metrics"], "accuracy", 0.5);  // its own metric kept
  EXPECT_EQ(std::string_view(m["tags"]["trainscope/top_finding"].get_string().value()), "dataloader-starvation");
  EXPECT_FALSE(fs::exists(home_ / "mlruns"));  // nothing went to the default store
}

TEST_F(Trackers, WithoutThePackagesTheRunStillEndsWell) {
  // The main venv has neither mlflow nor wandb: one line each, the job's exit status, the report.
  const std::string py = ts::test::torch_python();
  if (py.empty()) GTEST_SKIP() << "needs a Python with torch";
  if (std::system(("'" + py + "' -c 'import mlflow' >/dev/null 2>&1").c_str()) == 0 ||
      std::system(("'" + py + "' -c 'import wandb' >/dev/null 2>&1").c_str()) == 0)
    GTEST_SKIP() << py << " has mlflow or wandb installed";
  Result r = run(py, "--mlflow --wandb");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("trainscope: --mlflow: mlflow is not installed for " + py + " (pip install mlflow)\n"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trainscope: --wandb: wandb is not installed for " + py + " (pip install wandb)\n"),
            std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(home_ / "run" / "report.json"));
  EXPECT_NE(r.out.find("--mlflow/--wandb: export incomplete (exit status 3"), std::string::npos) << r.out;
}
