// dataloader-starvation under DDP (issue 38: "a waiting loader in any layout"): ranks step in
// lockstep, so when one rank's loader is slow the other ranks wait for it inside the allreduce with
// their own batches ready. The reporting rank (rank 0) may be one of those: the job's data wait is
// its most-waiting rank's.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::find;

Evidence ddp(double rank1_data_ms) {
  Evidence ev;
  AgentEvidence a;  // rank 0: its batches are ready, it waits in the collective
  a.steps = 30;
  a.step_ms = 100;
  a.step_mean_ms = 100;
  a.data_wait_pct = 1;
  a.data_wait_ms = 1;
  a.loading_cpu_share = 0.03;  // the loaders sleep (storage)
  a.loaders.push_back({});
  a.loaders.back().num_workers = 2;
  ev.agent = a;
  RanksEvidence r;
  r.source = "agent";
  RanksEvidence::Rank r0, r1;
  r0.rank = 0, r0.step_ms = 100, r0.data_wait_ms = 1, r0.comm_ms = 90;
  r1.rank = 1, r1.step_ms = 100, r1.data_wait_ms = rank1_data_ms;
  r.ranks = {r0, r1};
  ev.ranks = r;
  return ev;
}

TEST(DdpDataWait, TheMostWaitingRankSpeaksForTheJob) {
  const Finding* f = nullptr;
  Diagnosis d = diagnose(ddp(90));
  ASSERT_NE(f = find(d, "dataloader-starvation"), nullptr);
  bool named = false;
  for (const auto& e : f->evidence) {
    if (e.name == "waiting_rank") named = e.value == 1;
    if (e.name == "data_wait_pct") {
      EXPECT_NEAR(e.value, 90, 1e-9);
    }
  }
  EXPECT_TRUE(named);
  // No rank waits for data: silent.
  EXPECT_EQ(find(diagnose(ddp(1)), "dataloader-starvation"), nullptr);
}

}  // namespace
}  // namespace ts::diagnose
