// `trainscope verify` and `run --set` end to end on the real examples (Debian's PyTorch 1.13, CPU).
// SERIAL: they measure step times. Bounds are ratios between runs of the same script, never
// wall-clock limits, and generous (the done-criterion is predicted and measured within 25%).
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
#include "support/contention.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CommandResult;

bool have_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

class VerifyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_torch()) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
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

// 4 ms of waiting per sample, num_workers=0: the recommended workers, applied at run time,
// give what the model predicted (at least 75% of it; above, up to the model with no hand-over),
// and the table, JSON and store agree.
// Load: the baseline waits on sleeps; the fixed run, its wait gone, is mostly CPU (the loop, the
// workers' hand-over), so other processes' load stretches the fixed run alone and pulls the
// measured speedup below the prediction (0.259 off under ctest -j2 beside two builds; 0.30 beside
// two busy loops). The model sizes the workers for the machine's cores, free ones assumed; other
// work on them breaks that premise, not the model. So when the measured speedup falls short while
// others took at least half a core (tests/support/contention.h), verify runs again, once; if it
// falls short again and the machine was busy again, the test says so and skips the comparison
// (never a pass). A gain well above the prediction was also seen once, in CI (9.69x against
// 6.67x) while the probe saw no other load: a neighbour it cannot see (another VM, a build in
// another ctest slot) had slowed the baseline. So any miss is measured again, once; a second
// miss fails (short of the prediction on a busy machine: skipped, as above).
// Above the prediction the bound is the model's own: its step is the slower of the workers'
// delivery and the loop's compute plus its hand-over (th::kWorkerHandoverMs, 0.7 ms, measured hot),
// so a gain above the prediction passes up to the model's step with no hand-over at all (within the
// same 25%): only a gain beyond what removing every wait could give, or short of the prediction, is
// a miss. Until 2026-11-27 the model added a fixed 2.5 ms hand-over to the workers' period, and
// quiet runs measured 1.3-2x its gain (session 12: 8.8x, 9.0x, 10.8x against 6.7-7.1x); the
// hand-over overlaps the loop's wait for the workers, and now the demo's runs measure 0.95-1.09x
// the prediction (docs/FINDINGS.md).
namespace {
bool within_model(double predicted, double measured, double baseline_ms) {
  if (measured < predicted * (1 - 0.25)) return false;
  const double no_handover_ms = baseline_ms / predicted - ts::diagnose::th::kWorkerHandoverMs;
  return no_handover_ms <= 0 || measured <= baseline_ms / no_handover_ms * (1 + 0.25);
}
}  // namespace

TEST_F(VerifyCli, DataStarvedPredictedMatchesMeasured) {
  const std::string cmd = fmt::format("verify --json --steps 200 -- /usr/bin/python3 {} 400", example("data_starved.py"));
  Result r;
  // The last run's step times, for the log: which side moved when the two disagree.
  auto step_times = [&] {
    simdjson::dom::element doc;
    double base = 0, fixed = 0;
    if (r.code != 0 || parser_.parse(r.out).get(doc) || doc["baseline"]["step_ms"].get(base)) return std::string();
    for (simdjson::dom::element f : doc["fixes"].get_array())
      if (std::string_view id; !f["finding"].get(id) && id == "dataloader-starvation")
        if (f["run"]["step_ms"].get(fixed)) fixed = 0;
    return fmt::format("baseline {:.2f} ms, fixed {:.2f} ms per step", base, fixed);
  };
  auto run = [&] { return ts::test::measure_contention([&] { r = cli(cmd); }); };
  auto missed = [&](double& predicted, double& measured) {
    simdjson::dom::element doc;
    simdjson::dom::array fixes;
    double base = 0;
    if (r.code != 0 || parser_.parse(r.out).get(doc) || doc["fixes"].get(fixes) || doc["baseline"]["step_ms"].get(base))
      return false;
    for (simdjson::dom::element f : fixes) {
      std::string_view id;
      if (!f["finding"].get(id) && id == "dataloader-starvation") {
        if (f["predicted_speedup"].get(predicted) || f["measured_speedup"].get(measured)) return false;
        return !within_model(predicted, measured, base);
      }
    }
    return false;
  };
  ts::test::Contention load = run();
  std::string tries = fmt::format("others used {:.2f} cores", load.other_cores);
  double p = 0, m = 0;
  if (missed(p, m)) {
    tries += fmt::format(" (predicted {:.2f}x, measured {:.2f}x; {}); measured again: ", p, m, step_times());
    load = run();
    tries += fmt::format("others used {:.2f} cores", load.other_cores);
  }
  tries += "; " + step_times();
  fmt::print("load during the runs: {}\n", tries);  // in the test's log, pass or fail
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

  // Last, as it may skip: measured at least 75% of the prediction, at most the no-hand-over bound.
  if (measured < predicted * (1 - 0.25) && load.loaded())
    GTEST_SKIP() << "the machine was busy with other work on both tries, so the fix's workers had no free core: "
                 << "predicted " << predicted << "x, measured " << measured << "x; " << tries;
  const double baseline_ms = doc["baseline"]["step_ms"].get_double().value();
  EXPECT_TRUE(within_model(predicted, measured, baseline_ms))
      << "predicted " << predicted << "x, measured " << measured << "x (at most "
      << baseline_ms / (baseline_ms / predicted - ts::diagnose::th::kWorkerHandoverMs) << "x with no hand-over); " << tries;
}

// Loading that computes (~1 ms of Python per sample) on this 2-core machine: no gain predicted
// from more workers, and none measured.
// With --max-regression (the gate a CI job sets on a fix that must hold its gain), the verdict in
// the JSON, the exit status and the one stderr line follow from the fixes' own figures: each fix
// fails when its re-run is more than the limit slower than its predicted step or is not resolved.
TEST_F(VerifyCli, CpuBoundLoaderNoGainPredictedNoneMeasured) {
  Result r = cli(fmt::format("verify --json --max-regression 10% --steps 120 -- /usr/bin/python3 {} 300",
                             example("cpu_bound_loader.py")));
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  simdjson::dom::element doc = parser_.parse(r.out);
  auto f = fix_for(doc, "dataloader-starvation");
  double predicted = f["predicted_speedup"].get_double().value();
  double measured = f["measured_speedup"].get_double().value();
  EXPECT_LT(predicted, 1.10) << f["setting"].get_string().value();
  EXPECT_LT(measured, 1.25) << "predicted " << predicted << "x, measured " << measured << "x";

  const double base = doc["baseline"]["step_ms"].get_double().value();
  bool holds = true;
  std::vector<simdjson::dom::element> fixes;
  for (simdjson::dom::element x : doc["fixes"].get_array()) fixes.push_back(x);
  if (simdjson::dom::element all; !doc["all"].get(all) && all.is_object()) fixes.push_back(all);
  for (simdjson::dom::element x : fixes) {
    const double step = x["run"]["step_ms"].get_double().value();
    const double predicted_ms = base / x["predicted_speedup"].get_double().value();
    holds = holds && x["resolved"].get_bool().value() && step <= predicted_ms * 1.10;
  }
  simdjson::dom::element gate = doc["gate"];
  EXPECT_EQ(bool(gate["pass"].get_bool().value()), holds) << r.out;
  EXPECT_EQ(r.code, holds ? 0 : 1) << r.err;
  const std::string line = "trainscope: verify: " + std::string(gate["line"].get_string().value()) + "\n";
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - line.size()), line);  // the last line, for a CI log
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
