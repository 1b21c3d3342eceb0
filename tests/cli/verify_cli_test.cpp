// `trainscope verify` and `run --set` end to end on the real examples (Debian's PyTorch 1.13, CPU).
// Not serial: the only bound on a speedup is a sleep-bound outcome (a loader
// that sleeps gains at least 2x from workers); predicted against measured is bench/verify's.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <string>

#include "diagnose/thresholds.h"
#include "support/shell.h"
#include "support/torch_python.h"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CommandResult;


class VerifyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ts::test::system_python_has_torch()) << "/usr/bin/python3 does not import torch (Debian's python3-torch: scripts/bootstrap --test)";
    home_ = fs::temp_directory_path() / fmt::format("ts_verify_cli_{}_{}", getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!home_.empty() && !HasFailure()) fs::remove_all(home_, ec);
  }
  Result cli(const std::string& args) {
    return ts::test::run_capture(fmt::format("cd {} && TRAINSCOPE_HOME={} timeout 500 {} {} < /dev/null", home_.string(),
                                             home_.string(), TS_CLI, args),
                                 (home_ / "stderr.txt").string());
  }
  static std::string example(const std::string& name) { return std::string(TS_SOURCE_DIR) + "/examples/" + name; }
  fs::path home_;
  simdjson::dom::parser parser_;
};

simdjson::dom::element fix_for(simdjson::dom::element doc, const std::string& id) {
  simdjson::dom::array fixes = doc["fixes"].get_array().value();
  for (auto f : fixes)
    if (std::string_view(f["finding"].get_string().value()) == id) return f;
  ADD_FAILURE() << "no fix for " << id;
  return {};
}

}  // namespace

// 4 ms of waiting per sample, num_workers=0: the recommended workers, applied at run time, at
// least double the speed, and the table, JSON and store agree. The baseline waits 32 ms of sleep
// per batch of 8; the fix's workers sleep in parallel, so the gain is the sleeps', which a loaded
// machine cannot take away (sleeping needs no CPU): at least 2x is the outcome asserted. How
// close the measured gain comes to the predicted one is a ratio that load moves (0.62-1.26 over
// 14 runs, README): bench/verify/verify_accuracy.sh measures it, docs/BENCHMARKS.md records it.
TEST_F(VerifyCli, DataStarvedFixAtLeastDoublesTheSpeed) {
  Result r = cli(fmt::format("verify --json --steps 200 -- /usr/bin/python3 {} 400", example("data_starved.py")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("trainscope verify: baseline run"), std::string::npos) << r.err;  // progress on stderr
  simdjson::dom::element doc = parser_.parse(r.out);
  EXPECT_EQ(std::string_view(doc["schema"].get_string().value()), "trainscope.verify/1");
  auto f = fix_for(doc, "dataloader-starvation");
  std::string setting(f["setting"].get_string().value());
  std::string workers(f["settings"]["dataloader.num_workers"].get_string().value());
  // Loading sleeps (about 1% CPU): sized past the cores (2 here), not capped at cores - 1.
  EXPECT_GT(std::stoi(workers), 2) << setting;
  double predicted = f["predicted_speedup"].get_double().value();
  double measured = f["measured_speedup"].get_double().value();
  EXPECT_GT(predicted, 3.0);
  // The run with the fix says what it applied.
  bool applied = false;
  simdjson::dom::array fix_overrides = f["run"]["overrides"].get_array().value();
  for (auto o : fix_overrides)
    if (std::string_view(o["key"].get_string().value()) == "dataloader.num_workers") applied = o["applied"].get_bool().value();
  EXPECT_TRUE(applied);
  EXPECT_NE(std::string_view(f["code"].get_string().value()).find("num_workers=" + workers), std::string::npos);
  // Resolved: what the re-run still charges the finding is under 5% of the baseline's step.
  const double charged = f["still_charged_ms"].get_double().value();
  EXPECT_GE(charged, 0);
  EXPECT_EQ(f["resolved"].get_bool().value(),
            charged < ts::diagnose::th::kVerdictMinRecoverable * doc["baseline"]["step_ms"].get_double().value())
      << charged << " ms still charged";

  // Stored as kind verify: listed by `runs`, shown by `report` (the same table as printed).
  Result runs = cli("runs --kind verify");
  ASSERT_EQ(runs.code, 0) << runs.err;
  EXPECT_NE(runs.out.find("verify"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("dataloader-starvation"), std::string::npos) << runs.out;
  Result rep = cli("report 1");
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_NE(rep.out.find("predicted"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("Make it permanent"), std::string::npos) << rep.out;

  // The sleep-bound outcome: the fix at least doubles the speed.
  EXPECT_GE(measured, 2.0) << "predicted " << predicted << "x, measured " << measured << "x";
}

// Loading that computes (~1 ms of Python per sample) on this 2-core machine: the fix is sized,
// run and measured, and the table agrees with the JSON. Whether the model predicts no gain rests on
// the loading's CPU share, which other work on the cores lowers (a process waiting for a core is
// not on the CPU): at load 6 it predicted 1.24x. So the gain, predicted and measured, is
// bench/loader/verify_accuracy.sh's (with cpu_bound_loader.py), not bounded here.
TEST_F(VerifyCli, CpuBoundLoaderFixIsSizedRunAndMeasured) {
  Result r = cli(fmt::format("verify --json --steps 120 -- /usr/bin/python3 {} 300", example("cpu_bound_loader.py")));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto f = fix_for(doc, "dataloader-starvation");
  const int workers = std::stoi(std::string(f["settings"]["dataloader.num_workers"].get_string().value()));
  EXPECT_GE(workers, 1);
  EXPECT_LE(workers, 16);  // kMaxLoaderWorkers
  EXPECT_GT(f["predicted_speedup"].get_double().value(), 0.0);
  EXPECT_GT(f["measured_speedup"].get_double().value(), 0.0);
  bool applied = false;
  simdjson::dom::array overrides = f["run"]["overrides"].get_array().value();  // not a temporary: for binds a reference
  for (auto o : overrides)
    if (std::string_view(o["key"].get_string().value()) == "dataloader.num_workers") applied = o["applied"].get_bool().value();
  EXPECT_TRUE(applied) << "the fix's run did not apply num_workers=" << workers;
}

// Overrides on a script without a DataLoader: said in the report, the run goes on (exit 0);
// a CUDA-only setting on this CPU run says so; the ones that apply are applied.
TEST_F(VerifyCli, OverridesWithoutADataLoaderAreReportedAndTheRunContinues) {
  Result r = cli(fmt::format("run --no-profile --no-store --out out --set dataloader.num_workers=4 "
                             "--set copy.non_blocking=true --set threads=1 -- /usr/bin/python3 {}",
                             std::string(TS_SOURCE_DIR) + "/examples/healthy.py"));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.load((home_ / "out" / "report.json").string());
  std::map<std::string, std::pair<bool, std::string>> got;
  simdjson::dom::array overrides = doc["run"]["overrides"].get_array().value();
  for (auto o : overrides)
    got[std::string(o["key"].get_string().value())] = {o["applied"].get_bool().value(),
                                                        std::string(o["reason"].get_string().value())};
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got["dataloader.num_workers"].first);
  EXPECT_EQ(got["dataloader.num_workers"].second, "no DataLoader in this script");
  EXPECT_FALSE(got["copy.non_blocking"].first);
  EXPECT_EQ(got["copy.non_blocking"].second, "CUDA only, and this run has no CUDA device");
  EXPECT_TRUE(got["threads"].first) << got["threads"].second;
  EXPECT_EQ(doc["run"]["agent"]["settings"]["torch_threads"].get_int64().value(), 1);
  // The text report says it too.
  std::string txt = ts::test::read_file((home_ / "out" / "report.txt").string());
  EXPECT_NE(txt.find("dataloader.num_workers=4: not applied: no DataLoader in this script"), std::string::npos) << txt;
}

// mp.spawn ranks (issue 38): the ranks are children of the launching process, so the settings must
// reach them through the agent in each rank, and the measurement is the ranks'. The corpus's
// spawn_ddp (2 gloo ranks; 36 steps, the fewest verify takes here), its loaders waiting 1 ms per
// sample (the case's 50 ms is sized for the 2 workers of its --set): verify's fix then has 8 workers
// per rank, not 16, and each is a spawned interpreter importing torch, which is most of the test's
// time (15.9 s alone against 26.4 s at 5 ms). Its dataloader-starvation fix is applied in the ranks,
// and sleeping loaders gain from workers whatever the cores do (at least 1.3x asserted; measured
// 2.5x). Serial (tests/cli/CMakeLists.txt): its fix run's spawned workers starve a neighbour.
TEST_F(VerifyCli, SpawnRanksGetTheFixAndAreMeasured) {
  Result r = cli(fmt::format("verify --json --steps 36 -- /usr/bin/python3 {}/tests/corpus/spawn_ddp/train.py 36 0.001",
                             TS_SOURCE_DIR));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto f = fix_for(doc, "dataloader-starvation");
  bool applied = false;
  simdjson::dom::array fix_overrides = f["run"]["overrides"].get_array().value();
  for (auto o : fix_overrides)
    if (std::string_view(o["key"].get_string().value()) == "dataloader.num_workers") applied = o["applied"].get_bool().value();
  EXPECT_TRUE(applied) << r.out;
  const double measured = f["measured_speedup"].get_double().value();
  EXPECT_GE(measured, 1.3) << "predicted " << f["predicted_speedup"].get_double().value() << "x";
}
