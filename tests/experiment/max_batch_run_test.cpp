// max-batch against a memory limit on the CPU. The example's model needs ~3 MiB per sample and almost
// nothing fixed; the batch the limit implies is computed here independently, from two plain training
// steps in fresh Python processes measured by the kernel's peak-RSS counter, and the search must land on it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <string>

#include "experiment/max_batch.h"
#include "experiment/stats.h"
#include "support/one_intra_op_thread.h"
#include "torch_python.h"

using namespace ts::experiment;

// One fp32 training step at batch B in a fresh process: bytes the step added to the peak RSS.
static double reference_step_bytes(int batch) {
  std::string script =
      "import sys, torch; sys.path.insert(0, '" TS_SOURCE_DIR "/examples/lab'); import tiny_convnet as t\n"
      "d = t.wide_activations(); m = d['model']; ds = d['dataset']\n"
      "opt = torch.optim.Adam(m.parameters(), lr=1e-4)\n"
      "def step(b):\n"
      "    x = torch.stack([ds[i % len(ds)][0] for i in range(b)]); y = torch.tensor([i % 10 for i in range(b)])\n"
      "    d['loss_fn'](m(x), y).backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
      "    opt.step(); opt.zero_grad(set_to_none=True)\n"
      "def kb(f):\n"
      "    return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(f + ':')][0] * 1024\n"
      "step(2); rss = kb('VmRSS'); step(" +
      std::to_string(batch) + "); print(kb('VmHWM') - rss)\n";
  // The trials' fixed mmap threshold (max_batch.cpp): the step's live tensors, not where glibc's
  // dynamic threshold happened to put a freed activation.
  std::string cmd = "MALLOC_MMAP_THRESHOLD_=131072 " + ts::test::torch_python() + " - 2>/dev/null <<'EOF'\n" + script + "EOF\n";
  FILE* f = popen(cmd.c_str(), "r");
  std::array<char, 256> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), f)) out += buf.data();
  pclose(f);
  return std::atof(out.c_str());
}

// A trial's peak RSS depends on how the allocator's arenas fill: with two intra-op threads, two
// busy loops beside the test made the search land on 29-31 where the limit implies 42 (a fresh
// clone's ctest failed so), hence one intra-op thread for the reference and the search both. Even
// so, glibc's dynamic mmap threshold put one activation more (+33%) in about one trial in five,
// whatever the load (a fresh clone's ctest: 31, 31 and 29 in three tries); the trials now run with
// a fixed threshold (max_batch.cpp), and so does the reference. The kernel's RSS counters are
// per-CPU and read approximately, so a miss still measures again, the reference and the search
// both, twice at most; a third miss fails, and the bound is unchanged.
TEST(MaxBatchRun, MatchesWhatTheLimitImplies) {
  TS_REQUIRE_TORCH();
  ts::test::OneIntraOpThread one;
  const double limit = 128.0 * 1024 * 1024;
  MaxBatchOptions o;
  o.target = std::string(TS_SOURCE_DIR) + "/examples/lab/tiny_convnet.py:wide_activations";
  o.python = ts::test::torch_python();
  o.memory_limit_bytes = limit;
  o.progress = false;
  MaxBatchResult r;
  double per_sample = 0, fixed = 0, implied = 0;
  auto measure = [&] {
    r = run_max_batch(o);
    const double b1 = reference_step_bytes(8), b2 = reference_step_bytes(32);
    per_sample = (b2 - b1) / 24, fixed = b1 - 8 * per_sample;
    implied = (limit - fixed) / per_sample;
    return b1 > 0 && b2 > b1;
  };
  auto lands = [&] { return std::abs(double(r.max_batch) - implied) <= std::max(3.0, 0.1 * implied); };
  ASSERT_TRUE(measure()) << "the reference steps measured nothing";
  std::string tries = fmt::format("search {} against {:.1f} implied", r.max_batch, implied);
  for (int again = 0; again < 2 && !lands(); ++again) {
    ASSERT_TRUE(measure()) << "the reference steps measured nothing";
    tries += fmt::format("; measured again: search {} against {:.1f}", r.max_batch, implied);
  }
  std::printf("max-batch: %s\n", tries.c_str());  // in the test's log, pass or fail

  ASSERT_FALSE(r.cap_reached);
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.capacity_bytes, limit);
  EXPECT_EQ(r.first_miss, r.max_batch + 1);  // the binary search ran to the end
  for (auto& t : r.trials) EXPECT_EQ(t.fits, t.peak_bytes <= limit) << "batch " << t.batch;
  // Doubling from 2: 2, 4, 8, ... up to the first miss, then bisection.
  ASSERT_GE(r.trials.size(), 3u);
  EXPECT_EQ(r.trials[0].batch, 2);
  EXPECT_EQ(r.trials[1].batch, 4);
  // The activation is 1024 x 256 fp32 = 1 MiB per sample; a step holds a few of them.
  EXPECT_GT(per_sample, 1.0 * 1048576);
  EXPECT_LT(per_sample, 6.0 * 1048576);
  EXPECT_NEAR(double(r.max_batch), implied, std::max(3.0, 0.1 * implied))
      << "reference: " << per_sample << " B/sample + " << fixed << " B; " << tries;
  EXPECT_NEAR(r.bytes_per_sample, per_sample, 0.1 * per_sample);
  EXPECT_LE(r.recommended_batch, r.max_batch);
  EXPECT_LE(r.fixed_bytes + r.bytes_per_sample * r.recommended_batch, 0.9 * limit + 1);
}
