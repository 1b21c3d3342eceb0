// anomaly-detection on hand-built evidence (the figures of a real run: the plain-loop model of
// docs/FINDINGS.md on the 2-core VM, 28 stack captures of 1.49 ms in a 6.3 ms step, 53 gradients of
// 1.09 M elements tested for NaN at 2.83 us + 0.787 ns per element), so every number is worked
// out by hand; the real runs are corpus case anomaly_left_on and SetKeys.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::code_site;
using test::ev_value;
using test::find;

Evidence on_in_training(bool check_nan = true) {
  Evidence ev;
  AgentEvidence a;
  a.steps = 300;
  a.step_ms = a.step_mean_ms = 6.3;
  a.param_device = "cpu";
  AgentEvidence::Anomaly an;
  an.check_nan = check_nan;
  an.captures_per_step = 28;
  an.capture_ns_per_step = 1.49e6;
  an.nodes_per_step = 28;
  an.grad_tests_per_step = 53;
  an.grad_elems_per_step = 1092362;
  an.nan_test_ns = 2834;
  an.nan_elem_ns = 0.787;
  a.anomaly = an;
  a.sites.push_back(code_site("anomaly", "/work/train.py", 2));
  ev.agent = a;
  return ev;
}

TEST(AnomalyDetection, TheMeasuredCostOfItsStepIsTheGain) {
  Diagnosis d = diagnose(on_in_training());
  const Finding* f = find(d, "anomaly-detection");
  ASSERT_NE(f, nullptr);
  // 1.49 ms of captures + 53 x 2.834 us + 1,092,362 x 0.787 ns = 1.49 + 0.150 + 0.860 = 2.50 ms.
  const double cost = 1.49 + 53 * 2.834e-3 + 1092362 * 0.787e-6;
  EXPECT_NEAR(ev_value(*f, "anomaly_ms_per_step"), cost, 1e-6);
  EXPECT_NEAR(f->recoverable_fraction, cost / 6.3, 1e-6);
  EXPECT_NEAR(ev_value(*f, "nan_test_ms_per_step"), cost - 1.49, 1e-6);
  ASSERT_EQ(f->fix_settings.size(), 1u);
  EXPECT_EQ(f->fix_settings[0].first, "autograd.detect_anomaly");
  EXPECT_EQ(f->fix_settings[0].second, "false");
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].line, 2);
  // Without check_nan only the captures count.
  Diagnosis d2 = diagnose(on_in_training(false));
  const Finding* g = find(d2, "anomaly-detection");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(g->recoverable_fraction, 1.49 / 6.3, 1e-6);
}

TEST(AnomalyDetection, OnButUnmeasuredOrCheapIsSilent) {
  Evidence unmeasured = on_in_training();
  unmeasured.agent->anomaly->captures_per_step = -1;  // the run ended before the measured step
  EXPECT_EQ(find(diagnose(unmeasured), "anomaly-detection"), nullptr);
  Evidence cheap = on_in_training(false);
  cheap.agent->anomaly->capture_ns_per_step = 0.1e6;  // 0.1 of 6.3 ms: 1.6%, under 2%
  EXPECT_EQ(find(diagnose(cheap), "anomaly-detection"), nullptr);
  Evidence off = on_in_training();
  off.agent->anomaly.reset();
  EXPECT_EQ(find(diagnose(off), "anomaly-detection"), nullptr);
}

TEST(AnomalyDetection, LightningNamesItsKnobAtTheTrainerLine) {
  Evidence ev = on_in_training();
  CodeSite cfg = code_site("config", "/work/train.py", 20);
  cfg.detail = "lightning.Trainer";
  cfg.knobs.push_back({"detect_anomaly", "1"});
  ev.agent->sites = {cfg};
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "anomaly-detection");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].line, 20);
  EXPECT_NE(f->sites[0].note.find("detect_anomaly=False"), std::string::npos) << f->sites[0].note;
  // Trainer(detect_anomaly=False), the script's own call turned it on: that call's line.
  ev.agent->sites[0].knobs = {{"detect_anomaly", "0"}};
  ev.agent->sites.push_back(code_site("anomaly", "/work/train.py", 2));
  Diagnosis d2 = diagnose(ev);
  const Finding* g = find(d2, "anomaly-detection");
  ASSERT_NE(g, nullptr);
  ASSERT_FALSE(g->sites.empty());
  EXPECT_EQ(g->sites[0].line, 2);
}

}  // namespace
}  // namespace ts::diagnose
