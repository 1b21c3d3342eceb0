// straggler-rank on hand-built per-rank evidence, and the run layer's busy/wait arithmetic
// (run/rank_summary.h) on numbers worked out by hand.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"
#include "run/rank_summary.h"

using namespace ts::diagnose;
using ts::test::ev_value;
using ts::test::find;

namespace {

// The DDP job of tests/fleet: every rank's step is ~125 ms (they sync); rank `slow` sleeps
// `extra_data_ms` in its collate, so its data wait is that much higher and the others spend
// it waiting inside backward() (the all-reduce).
RanksEvidence ddp_job(int ranks, int slow, double extra_data_ms) {
  RanksEvidence ev;
  ev.source = "agent";
  std::vector<double> nonsync, sync;
  for (int r = 0; r < ranks; ++r) {
    RanksEvidence::Rank row;
    row.rank = r;
    row.pid = 1000 + r;
    row.steps = 20;
    row.data_wait_ms = 0.5 + (r == slow ? extra_data_ms : 0);
    row.forward_ms = 20;
    row.optimizer_ms = 5;
    double own_backward = 40;  // backward's own work + the all-reduce itself
    row.backward_ms = own_backward + (r == slow ? 0 : extra_data_ms);
    row.step_ms = 0.5 + extra_data_ms + 20 + 5 + own_backward + 2;  // +2 ms other loop code
    nonsync.push_back(row.step_ms - row.backward_ms);
    sync.push_back(row.backward_ms);
    ev.ranks.push_back(row);
  }
  ts::run::find_straggler(ev, nonsync, sync);
  return ev;
}

}  // namespace

TEST(StragglerRank, BusyAndWaitFromBackward) {
  RanksEvidence ev = ddp_job(2, 1, 30);
  // busy = median(step - backward) + min backward: rank 1 = 67.5 - 40 ... worked out:
  // step = 97.5; rank 0: nonsync 97.5 - 70 = 27.5, rank 1: 97.5 - 40 = 57.5; min sync 40.
  EXPECT_NEAR(ev.ranks[0].busy_ms, 67.5, 1e-9);
  EXPECT_NEAR(ev.ranks[1].busy_ms, 97.5, 1e-9);
  EXPECT_NEAR(ev.ranks[0].wait_ms, 30, 1e-9);
  EXPECT_NEAR(ev.ranks[1].wait_ms, 0, 1e-9);
  EXPECT_NEAR(ev.median_busy_ms, 82.5, 1e-9);
  EXPECT_NEAR(ev.straggler_gap_ms, 15, 1e-9);
  EXPECT_EQ(ev.straggler_rank, 1);  // 97.5 > 1.10 x 82.5 = 90.75
  EXPECT_TRUE(ev.ranks[1].straggler);
  EXPECT_FALSE(ev.ranks[0].straggler);
}

TEST(StragglerRank, FiresWithDataFix) {
  Evidence e;
  e.ranks = ddp_job(4, 2, 30);
  Diagnosis d = diagnose(e);
  const Finding* f = find(d, "straggler-rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(ev_value(*f, "straggler_rank"), 2);
  EXPECT_NEAR(ev_value(*f, "straggler_busy_ms"), 97.5, 1e-9);
  EXPECT_NEAR(ev_value(*f, "median_busy_ms"), 67.5, 1e-9);  // 3 of 4 ranks at 67.5
  EXPECT_NEAR(ev_value(*f, "others_wait_ms_per_step"), 30, 1e-9);
  EXPECT_NEAR(ev_value(*f, "others_wait_pct_of_step"), 100.0 * 30 / 97.5, 1e-9);
  EXPECT_NEAR(ev_value(*f, "straggler_extra_data_ms"), 30, 1e-9);
  EXPECT_EQ(f->source, "agent");
  EXPECT_EQ(f->bottleneck, Bottleneck::DataPipeline);
  EXPECT_NEAR(f->recoverable_fraction, 30 / 97.5, 1e-9);
  EXPECT_NE(f->title.find("rank 2"), std::string::npos);
  EXPECT_NE(f->fix.find("num_workers"), std::string::npos);
  EXPECT_NE(f->fix.find("balance the data"), std::string::npos);
}

TEST(StragglerRank, ComputePhaseNamed) {
  Evidence e;
  RanksEvidence ev = ddp_job(2, -1, 0);
  // Rank 1 computes 25 ms more in forward; rank 0 waits it out in backward.
  ev.ranks[1].forward_ms += 25;
  ev.ranks[0].backward_ms += 25;
  for (auto& r : ev.ranks) r.step_ms += 25;
  ts::run::find_straggler(ev, {ev.ranks[0].step_ms - ev.ranks[0].backward_ms, ev.ranks[1].step_ms - ev.ranks[1].backward_ms},
                          {ev.ranks[0].backward_ms, ev.ranks[1].backward_ms});
  e.ranks = ev;
  const Finding* f = nullptr;
  Diagnosis d = diagnose(e);
  f = find(d, "straggler-rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(ev_value(*f, "straggler_rank"), 1);
  EXPECT_NEAR(ev_value(*f, "straggler_extra_compute_ms"), 25, 1e-9);
  EXPECT_NE(f->fix.find("computes 25.0 ms more"), std::string::npos);
}

TEST(StragglerRank, SilentWhenBalanced) {
  Evidence e;
  e.ranks = ddp_job(2, 1, 5);  // busy 72.5 vs 67.5: 1.036 x the median 70
  EXPECT_EQ(e.ranks->straggler_rank, -1);
  Diagnosis d = diagnose(e);
  EXPECT_EQ(find(d, "straggler-rank"), nullptr);
}

TEST(StragglerRank, SilentWithoutRanks) {
  Evidence e;
  EXPECT_EQ(find(diagnose(e), "straggler-rank"), nullptr);
  RanksEvidence one = ddp_job(1, 0, 30);  // a single rank has nobody to wait for it
  e.ranks = one;
  EXPECT_EQ(find(diagnose(e), "straggler-rank"), nullptr);
}

TEST(StragglerRank, FromTraces) {
  // Two traces: rank 0 spends 40 ms per step in communication kernels, rank 1 10 ms; same
  // 100 ms step. busy: rank 0 = 60 + 10 = 70, rank 1 = 90 + 10 = 100.
  ts::analysis::MultiTraceAnalysis m;
  m.one_job = true;  // what compare_ranks concludes from the rank<N> file names
  for (int r = 0; r < 2; ++r) {
    ts::analysis::RankRow row;
    row.rank = r;
    row.path = "trace_rank" + std::to_string(r) + ".pt.trace.json";
    row.steps = 5;
    row.median_step_ns = 100'000'000;
    row.comm_ns_per_step = r == 0 ? 40e6 : 10e6;
    m.ranks.push_back(row);
  }
  auto ev = ts::run::ranks_from_traces(m);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->source, "traces");
  EXPECT_NEAR(ev->ranks[0].busy_ms, 70, 1e-9);
  EXPECT_NEAR(ev->ranks[1].busy_ms, 100, 1e-9);
  EXPECT_NEAR(ev->ranks[0].wait_ms, 30, 1e-9);
  EXPECT_EQ(ev->straggler_rank, 1);  // 100 > 1.1 x 85
  Evidence e;
  e.ranks = ev;
  const Finding* f = nullptr;
  Diagnosis d = diagnose(e);
  f = find(d, "straggler-rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, "traces");
  EXPECT_NEAR(ev_value(*f, "others_wait_ms_per_step"), 30, 1e-9);

  // The same numbers from traces that are not ranks of one job (two runs): no ranks evidence.
  m.one_job = false;
  EXPECT_FALSE(ts::run::ranks_from_traces(m).has_value());
}

TEST(StragglerRank, CommunicationBoundCountsOnlyWhatIsNotWaiting) {
  // Rank 0's trace: 40% of each 100 ms step in collectives, 30 ms of which it waits for rank 1
  // (RanksEvidence): communication-bound keeps 10% and says the rest is the straggler's.
  auto t = ts::test::trace_with_steps(4, 100, 0, 50);
  t.steps.total.communication = 160'000'000;  // 40% of 400 ms
  t.steps.total.other -= 160'000'000;
  t.parallel.rank = 0;
  Evidence e;
  e.trace = t;
  Diagnosis alone = diagnose(e);
  const Finding* f = find(alone, "communication-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.40, 1e-9);
  RanksEvidence ranks;
  ranks.source = "traces";
  for (int r = 0; r < 2; ++r) {
    RanksEvidence::Rank row;
    row.rank = r;
    row.steps = 4;
    row.step_ms = 100;
    ranks.ranks.push_back(row);
  }
  ts::run::find_straggler(ranks, {60, 90}, {40, 10});  // busy 70 / 100: rank 0 waits 30 ms
  ASSERT_NEAR(ranks.ranks[0].wait_ms, 30, 1e-9);
  e.ranks = ranks;
  Diagnosis d = diagnose(e);
  f = find(d, "communication-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.10, 1e-9);
  EXPECT_NEAR(ev_value(*f, "straggler_wait_pct_of_step"), 30, 1e-9);
  ASSERT_NE(find(d, "straggler-rank"), nullptr);
  EXPECT_EQ(d.findings[0].id, "straggler-rank");  // 15 ms of 100 back beats 10%
  // A slower rank under the straggler's bar (busy 80 / 90: 90 < 1.10 x 85): no straggler-rank
  // claims rank 0's 10 ms wait, and fewer synchronisations wait less often, so it stays
  // communication's.
  ts::run::find_straggler(ranks, {70, 80}, {30, 10});
  ASSERT_NEAR(ranks.ranks[0].wait_ms, 10, 1e-9);
  ASSERT_EQ(ranks.straggler_rank, -1);
  e.ranks = ranks;
  d = diagnose(e);
  EXPECT_EQ(find(d, "straggler-rank"), nullptr);
  f = find(d, "communication-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->recoverable_fraction, 0.40, 1e-9);
}
