// `trainscope verify` end to end where the machine must be the test's alone (SERIAL; Debian's PyTorch
// 1.13): loading that computes, whose finding and sizing rest on the loading's CPU share, which other
// tests on the cores would lower; and an mp.spawn job whose fix starts 16 DataLoader workers in each
// of its 2 ranks, spawned (a spawned rank's workers are spawned too), each importing torch: about
// 76 s of CPU in a burst, beside which a full ctest -j2 saw a neighbour's torch.compile share pass
// its threshold and max-batch's peak RSS move.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fmt/format.h>
#include <string>

#include "cli/verify_cli_fixture.h"

using ts::test::fix_for;
using ts::test::Result;
using ts::test::VerifyCli;

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

// mp.spawn ranks (issue 38): the ranks are children of the launching process, so the settings must
// reach them through the agent in each rank, and the measurement is the ranks'. The corpus's
// spawn_ddp (2 gloo ranks, 50 ms of waiting per sample): its dataloader-starvation fix is applied in
// the ranks, and sleeping loaders gain from workers whatever the cores do (at least 1.3x asserted).
TEST_F(VerifyCli, SpawnRanksGetTheFixAndAreMeasured) {
  Result r = cli(fmt::format("verify --json --steps 60 -- /usr/bin/python3 {}/tests/corpus/spawn_ddp/train.py 60", TS_SOURCE_DIR));
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
