// The regression gate's rules on sides built by hand (regression_gate.h): each rule alone, the
// limit's edges, the verify form, and the JSON it adds. Real runs drive it in tests/cli/compare_gate_test.cpp.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "experiment/regression_gate.h"

using namespace ts::experiment;

namespace {

CompareSide side(double step_ms, std::vector<CompareFinding> findings = {}) {
  CompareSide s;
  s.label = "side";
  s.kind = "run";
  s.step_ms = step_ms;
  s.findings = std::move(findings);
  return s;
}

CompareFinding finding(const std::string& id, double fraction, const std::string& severity = "high") {
  return {id, id + " title", severity, fraction};
}

}  // namespace

TEST(RegressionGate, ParsesLimits) {
  EXPECT_EQ(parse_regression_limit("5%"), 5.0);
  EXPECT_EQ(parse_regression_limit("5"), 5.0);
  EXPECT_EQ(parse_regression_limit("2.5 %"), 2.5);
  EXPECT_EQ(parse_regression_limit("0"), 0.0);
  EXPECT_FALSE(parse_regression_limit(""));
  EXPECT_FALSE(parse_regression_limit("%"));
  EXPECT_FALSE(parse_regression_limit("five"));
  EXPECT_FALSE(parse_regression_limit("-1%"));
  EXPECT_FALSE(parse_regression_limit("5%%"));
  EXPECT_FALSE(parse_regression_limit("1001"));
}

TEST(RegressionGate, StepTimeAgainstTheLimit) {
  // 50 -> 52 ms is +4%: within 5%. 50 -> 60 ms is +20%: over it, named with both step times.
  GateVerdict ok = gate_compare(compare_sides(side(50), side(52)), 5);
  EXPECT_TRUE(ok.pass) << ok.line;
  EXPECT_NE(ok.line.find("within the 5% limit"), std::string::npos) << ok.line;
  GateVerdict bad = gate_compare(compare_sides(side(50), side(60)), 5);
  ASSERT_FALSE(bad.pass);
  ASSERT_EQ(bad.regressions.size(), 1u);
  EXPECT_EQ(bad.regressions[0].what, "step time");
  EXPECT_NEAR(bad.regressions[0].change_pct, 20, 1e-9);
  EXPECT_EQ(bad.line, "regression over the 5% limit: step time +20.0% (50.00 -> 60.00 ms per step)");
  // Faster is never a regression, whatever the limit.
  EXPECT_TRUE(gate_compare(compare_sides(side(50), side(30)), 0).pass);
  // Exactly at the limit passes; a zero limit fails on any slowdown.
  EXPECT_TRUE(gate_compare(compare_sides(side(100), side(105)), 5).pass);
  EXPECT_FALSE(gate_compare(compare_sides(side(100), side(100.5)), 0).pass);
}

TEST(RegressionGate, NewFindingFailsANoteDoesNot) {
  auto r = compare_sides(side(50), side(50, {finding("dataloader-starvation", 0.8), finding("healthy-note", 0, "info")}));
  GateVerdict g = gate_compare(r, 5);
  ASSERT_FALSE(g.pass);
  ASSERT_EQ(g.regressions.size(), 1u) << g.line;
  EXPECT_EQ(g.regressions[0].what, "new finding dataloader-starvation");
  EXPECT_NEAR(g.regressions[0].change_pct, 80, 1e-9);  // it charges 80% of the (unchanged) step
  EXPECT_NE(g.line.find("high: dataloader-starvation title"), std::string::npos) << g.line;
  // A finding that was there before and charges the same is not new.
  auto same = compare_sides(side(50, {finding("dataloader-starvation", 0.8)}), side(50, {finding("dataloader-starvation", 0.8)}));
  EXPECT_TRUE(gate_compare(same, 5).pass);
}

TEST(RegressionGate, WorseFindingIsMeasuredInTheBaselinesStep) {
  // host-sync charged 10% of 50 ms (5 ms) before, 20% of 52 ms (10.4 ms) after: +10.8% of A's step.
  auto r = compare_sides(side(50, {finding("host-sync", 0.10)}), side(52, {finding("host-sync", 0.20)}));
  GateVerdict g = gate_compare(r, 5);
  ASSERT_FALSE(g.pass);
  ASSERT_EQ(g.regressions.size(), 1u) << g.line;
  EXPECT_EQ(g.regressions[0].what, "finding host-sync got worse");
  EXPECT_NEAR(g.regressions[0].change_pct, 100.0 * (10.4 - 5) / 50, 1e-9);
  EXPECT_TRUE(gate_compare(r, 11).pass);
  // Without step times, the share of the step itself.
  auto nosteps = compare_sides(side(-1, {finding("host-sync", 0.10)}), side(-1, {finding("host-sync", 0.30)}));
  GateVerdict g2 = gate_compare(nosteps, 5);
  ASSERT_FALSE(g2.pass);
  EXPECT_NEAR(g2.regressions[0].change_pct, 20, 1e-9);
}

TEST(RegressionGate, AfterSideWithoutStepTimeFails) {
  GateVerdict g = gate_compare(compare_sides(side(50), side(-1)), 5);
  ASSERT_FALSE(g.pass);
  EXPECT_NE(g.line.find("has no step time"), std::string::npos) << g.line;
}

TEST(RegressionGate, VerifyFixMustHoldItsGain) {
  VerifyResult r;
  r.baseline.step_ms = 40;
  VerifyFix fx;
  fx.finding = "dataloader-starvation";
  fx.predicted_speedup = 4;  // predicted step 10 ms
  fx.resolved = true;
  fx.still_charged_ms = 0;
  fx.run.step_ms = 10.8;  // 8% slower than predicted
  fx.measured_speedup = 40 / 10.8;
  r.fixes.push_back(fx);
  EXPECT_TRUE(gate_verify(r, 10).pass);
  GateVerdict g = gate_verify(r, 5);
  ASSERT_FALSE(g.pass);
  ASSERT_EQ(g.regressions.size(), 1u) << g.line;
  EXPECT_EQ(g.regressions[0].what, "dataloader-starvation fell short of its gain");
  EXPECT_NEAR(g.regressions[0].change_pct, 8, 1e-9);
  // Faster than predicted holds; unresolved does not, whatever the speed.
  r.fixes[0].run.step_ms = 8;
  r.fixes[0].measured_speedup = 5;
  EXPECT_TRUE(gate_verify(r, 5).pass);
  r.fixes[0].resolved = false;
  r.fixes[0].still_charged_ms = 4;
  GateVerdict g2 = gate_verify(r, 5);
  ASSERT_FALSE(g2.pass);
  EXPECT_EQ(g2.regressions[0].what, "dataloader-starvation not resolved");
  EXPECT_NEAR(g2.regressions[0].change_pct, 10, 1e-9);  // 4 of the baseline's 40 ms
  // A re-run that was never measured fails with its reason.
  r.fixes[0].resolved = true;
  r.fixes[0].run.step_ms = -1;
  r.fixes[0].measured_speedup = -1;
  r.fixes[0].run.problem = "the run ended after 12 steps";
  GateVerdict g3 = gate_verify(r, 5);
  ASSERT_FALSE(g3.pass);
  EXPECT_NE(g3.line.find("the run ended after 12 steps"), std::string::npos) << g3.line;
  // Nothing to fix: nothing to hold.
  EXPECT_TRUE(gate_verify(VerifyResult{}, 5).pass);
}

TEST(RegressionGate, JsonCarriesTheVerdict) {
  auto r = compare_sides(side(50), side(60, {finding("host-sync", 0.1)}));
  GateVerdict g = gate_compare(r, 5);
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_FALSE(p.parse(compare_json(r, gate_json(g))).get(doc));
  EXPECT_FALSE(bool(doc["gate"]["pass"].get_bool().value()));
  EXPECT_DOUBLE_EQ(double(doc["gate"]["max_regression_pct"].get_double().value()), 5);
  simdjson::dom::array regs = doc["gate"]["regressions"].get_array().value();
  ASSERT_EQ(regs.size(), 2u);
  EXPECT_EQ(std::string_view(regs.at(0)["what"].get_string().value()), "step time");
  EXPECT_EQ(std::string_view(regs.at(1)["what"].get_string().value()), "new finding host-sync");
  EXPECT_EQ(std::string_view(doc["gate"]["line"].get_string().value()), g.line);
  // Without a gate, no "gate" key.
  simdjson::dom::element plain;
  ASSERT_FALSE(p.parse(compare_json(r)).get(plain));
  simdjson::dom::element none;
  EXPECT_TRUE(plain["gate"].get(none) != simdjson::SUCCESS);
}
