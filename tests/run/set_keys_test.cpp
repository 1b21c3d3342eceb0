// Every `trainscope run --set` key applied to a real PyTorch 2.x training loop on the CPU, its
// effect read back from inside the training process (tests/run/scripts/set_probe.py writes what it
// saw): the DataLoader's attributes and the processes that loaded its samples, the optimizer's
// defaults, the thread count, gradients after zero_grad(), CPU autocast inside the forward, autograd
// anomaly detection at each step, Dynamo's counters. One run carries all the keys but compile (one process, many checks); the control run,
// without --set, shows the probe sees the script's own settings, so each difference is the
// override's. copy.non_blocking needs CUDA: on this CPU run it must say so, not apply.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <set>
#include <string>

#include "run_test_util.h"
#include "support/torch_python.h"

namespace ts::run::test {
namespace {

// PyTorch 2.x from the checkout's .venv (scripts/bootstrap): the keys target 2.x (compile, autocast
// on the CPU); a missing one is a failure that names it, never a skip.
#define REQUIRE_TORCH2()                                                                               \
  ASSERT_TRUE(ts::test::has_torch(TS_TORCH_PYTHON))                                                \
      << TS_TORCH_PYTHON << " does not import torch: scripts/bootstrap makes .venv with PyTorch 2.x"

struct Probe {
  RunResult run;
  simdjson::dom::parser parser;
  simdjson::dom::element facts;
};

void probe(Probe& p, const std::string& name, const std::string& mode, std::vector<Override> set) {
  const std::string dir = fresh_dir("set-keys-" + name);
  RunOptions opt;
  opt.command = {TS_TORCH_PYTHON, scripts_dir() + "/set_probe.py", dir + "/facts.json", mode};
  opt.out_dir = dir + "/out";
  opt.store = false;
  opt.quiet = true;
  opt.overrides = std::move(set);
  p.run = run_session(opt);
  ASSERT_EQ(p.run.exit.shell_code(), 0) << "set_probe.py " << mode << " failed under trainscope run";
  ASSERT_FALSE(p.parser.load(dir + "/facts.json").get(p.facts)) << dir << "/facts.json: unreadable";
}

const OverrideOutcome* outcome(const RunResult& r, const std::string& key) {
  for (const auto& o : r.overrides)
    if (o.key == key) return &o;
  return nullptr;
}

std::vector<bool> bools(simdjson::dom::element a) {
  std::vector<bool> v;
  for (auto x : a.get_array()) v.push_back(x.get_bool().value());
  return v;
}

std::set<int64_t> pids(simdjson::dom::element epoch) {
  std::set<int64_t> s;
  for (auto x : epoch.get_array()) s.insert(x.get_int64().value());
  return s;
}

}  // namespace

// Without --set: the probe reads back exactly what the script chose.
TEST(SetKeys, WithoutSetTheLoopKeepsItsOwnSettings) {
  REQUIRE_TORCH2();
  Probe p;
  probe(p, "control", "eager", {});
  if (HasFatalFailure()) return;
  auto f = p.facts;
  EXPECT_EQ(f["steps"].get_int64().value(), 16);
  EXPECT_EQ(f["loader"]["num_workers"].get_int64().value(), 0);
  EXPECT_TRUE(f["loader"]["pin_memory"].get_bool().value());
  EXPECT_FALSE(f["loader"]["persistent_workers"].get_bool().value());
  const int64_t main_pid = f["main_pid"].get_int64().value();
  for (auto epoch : f["loader_pids"].get_array()) EXPECT_EQ(pids(epoch), std::set<int64_t>{main_pid});
  EXPECT_TRUE(f["optimizer_defaults"]["foreach"].is_null());
  EXPECT_EQ(f["threads"].get_int64().value(), 2);
  EXPECT_GT(f["refault_pages"].get_int64().value(), 24000);  // glibc maps each 64 MiB block anew: 49,152 pages
  auto none = bools(f["grads_none_after_zero_grad"]);
  ASSERT_EQ(none.size(), 16u);
  for (size_t i = 1; i < none.size(); ++i) EXPECT_FALSE(none[i]) << "step " << i << ": zeroed, not freed";
  for (bool on : bools(f["autocast_in_forward"])) EXPECT_FALSE(on);
  for (bool on : bools(f["anomaly_at_step"])) EXPECT_TRUE(on) << "the script turns anomaly detection on";
  EXPECT_EQ(std::string_view(f["forward_dtype"].at(0).get_string().value()), "torch.float32");
  EXPECT_TRUE(p.run.overrides.empty());
  // PyTorch's warnings as the iterator starts name PyTorch's file, as they do without trainscope:
  // the agent's hook is not the frame their stacklevel points at (hooks_data.py).
  bool pin_warned = false;
  for (auto w : f["loader_warnings"].get_array()) {
    const std::string_view file = w["file"].get_string().value(), message = w["message"].get_string().value();
    EXPECT_EQ(file.find("trainscope_agent"), std::string_view::npos) << file << ": " << message;
    pin_warned |= message.find("pin_memory") != std::string_view::npos;
  }
  if (!f["accelerator"].get_bool().value()) {
    EXPECT_TRUE(pin_warned) << "no pin_memory warning without an accelerator";
  }
}

// Every key but compile in one run, each read back from the training process.
TEST(SetKeys, EveryKeyTakesEffectInTheTrainingProcess) {
  REQUIRE_TORCH2();
  Probe p;
  probe(p, "all", "eager",
        {{"dataloader.num_workers", "2"},
         {"dataloader.prefetch_factor", "3"},
         {"dataloader.persistent_workers", "true"},
         {"dataloader.pin_memory", "false"},
         {"optimizer.foreach", "true"},
         {"optimizer.fused", "true"},
         {"threads", "1"},
         {"zero_grad.set_to_none", "true"},
         {"autocast", "bf16"},
         {"autograd.detect_anomaly", "false"},
         {"malloc.mmap", "false"},
         {"copy.non_blocking", "true"}});
  if (HasFatalFailure()) return;
  auto f = p.facts;
  EXPECT_EQ(f["steps"].get_int64().value(), 16);
  EXPECT_TRUE(f["losses_finite"].get_bool().value());
  // DataLoader: its attributes, and the samples loaded in two worker processes, the same two in
  // both epochs (persistent), none in the training process.
  EXPECT_EQ(f["loader"]["num_workers"].get_int64().value(), 2);
  EXPECT_EQ(f["loader"]["prefetch_factor"].get_int64().value(), 3);
  EXPECT_TRUE(f["loader"]["persistent_workers"].get_bool().value());
  EXPECT_FALSE(f["loader"]["pin_memory"].get_bool().value());
  auto epochs = f["loader_pids"].get_array().value();
  ASSERT_EQ(epochs.size(), 2u);
  const auto first = pids(epochs.at(0).value()), second = pids(epochs.at(1).value());
  EXPECT_EQ(first.size(), 2u);
  EXPECT_EQ(first, second) << "persistent_workers: the second epoch had new worker processes";
  EXPECT_EQ(first.count(f["main_pid"].get_int64().value()), 0u) << "a sample was loaded in the training process";
  // Optimizer: fused in its defaults, PyTorch >= 2.4 having fused CPU kernels; foreach, asked for
  // too, left out (PyTorch takes one of the two). FalseIsAppliedAsFalse checks foreach alone.
  EXPECT_TRUE(f["optimizer_defaults"]["fused"].get_bool().value());
  EXPECT_TRUE(f["optimizer_defaults"]["foreach"].is_null() || !f["optimizer_defaults"]["foreach"].get_bool().value());
  // Threads: 1, though the script called torch.set_num_threads(2) at the start and after each epoch.
  EXPECT_EQ(f["threads"].get_int64().value(), 1);
  // zero_grad(set_to_none=False) in the script, gradients freed anyway.
  auto none = bools(f["grads_none_after_zero_grad"]);
  ASSERT_EQ(none.size(), 16u);
  for (size_t i = 0; i < none.size(); ++i) EXPECT_TRUE(none[i]) << "step " << i;
  // Autocast from the model's second call on (the hook finds the model during its first call).
  auto ac = bools(f["autocast_in_forward"]);
  ASSERT_EQ(ac.size(), 16u);
  for (size_t i = 1; i < ac.size(); ++i) EXPECT_TRUE(ac[i]) << "forward " << i << " not under CPU autocast";
  std::set<std::string> dtypes;
  for (auto d : f["forward_dtype"].get_array()) dtypes.insert(std::string(d.get_string().value()));
  EXPECT_TRUE(dtypes.count("torch.bfloat16")) << "no bf16 output from the autocast forward";
  // Anomaly detection: the script's set_detect_anomaly(True) left it off.
  auto anomaly = bools(f["anomaly_at_step"]);
  ASSERT_EQ(anomaly.size(), 16u);
  for (size_t i = 0; i < anomaly.size(); ++i) EXPECT_FALSE(anomaly[i]) << "step " << i << ": anomaly detection on";
  // What the agent reported matches what the process saw.
  // malloc: freed 64 MiB blocks' pages reused, not faulted in anew (the control run: ~49 k).
  EXPECT_LT(f["refault_pages"].get_int64().value(), 2000);
  for (const char* key : {"dataloader.num_workers", "dataloader.prefetch_factor", "dataloader.persistent_workers",
                          "dataloader.pin_memory", "optimizer.fused", "threads", "zero_grad.set_to_none", "autocast",
                          "autograd.detect_anomaly", "malloc.mmap"}) {
    const OverrideOutcome* o = outcome(p.run, key);
    ASSERT_NE(o, nullptr) << key << ": no outcome";
    EXPECT_TRUE(o->applied) << key << ": " << o->reason;
  }
  const OverrideOutcome* fe = outcome(p.run, "optimizer.foreach");
  ASSERT_NE(fe, nullptr);
  EXPECT_FALSE(fe->applied);
  EXPECT_NE(fe->reason.find("fused=True is applied instead"), std::string::npos) << fe->reason;
  const OverrideOutcome* nb = outcome(p.run, "copy.non_blocking");
  ASSERT_NE(nb, nullptr);
  EXPECT_FALSE(nb->applied);
  EXPECT_NE(nb->reason.find("CUDA"), std::string::npos) << nb->reason;
}

// The true|false keys take false as asked, never true instead: optimizer.foreach=false puts
// foreach=False in the optimizer (the script's Adam leaves it None), zero_grad.set_to_none=false
// keeps gradients as zeroed tensors. Before, foreach=false was reported "no torch.optim optimizer
// was created" and set_to_none=false freed the gradients anyway.
TEST(SetKeys, FalseIsAppliedAsFalse) {
  REQUIRE_TORCH2();
  Probe p;
  probe(p, "false", "eager", {{"optimizer.foreach", "false"}, {"zero_grad.set_to_none", "false"}});
  if (HasFatalFailure()) return;
  auto f = p.facts;
  ASSERT_FALSE(f["optimizer_defaults"]["foreach"].is_null()) << "foreach not set";
  EXPECT_FALSE(f["optimizer_defaults"]["foreach"].get_bool().value());
  auto none = bools(f["grads_none_after_zero_grad"]);
  ASSERT_EQ(none.size(), 16u);
  // From the second step: before the first backward there are no gradients to keep.
  for (size_t i = 1; i < none.size(); ++i) EXPECT_FALSE(none[i]) << "step " << i << ": gradients freed";
  for (const char* key : {"optimizer.foreach", "zero_grad.set_to_none"}) {
    const OverrideOutcome* o = outcome(p.run, key);
    ASSERT_NE(o, nullptr) << key << ": no outcome";
    EXPECT_TRUE(o->applied) << key << ": " << o->reason;
    EXPECT_NE(o->reason.find("=False"), std::string::npos) << key << ": " << o->reason;
  }
}

// compile=true: the model's forward compiled (inductor), counted by Dynamo inside the process;
// without it, Dynamo compiled nothing.
TEST(SetKeys, CompileIsCountedByDynamo) {
  REQUIRE_TORCH2();
  Probe control, p;
  probe(control, "compile-control", "compile", {});
  if (HasFatalFailure()) return;
  EXPECT_EQ(control.facts["dynamo"]["unique_graphs"].get_int64().value(), 0);
  probe(p, "compile", "compile", {{"compile", "true"}});
  if (HasFatalFailure()) return;
  EXPECT_GE(p.facts["dynamo"]["unique_graphs"].get_int64().value(), 1);
  EXPECT_GE(p.facts["dynamo"]["frames_ok"].get_int64().value(), 1);
  EXPECT_TRUE(p.facts["losses_finite"].get_bool().value());
  EXPECT_EQ(p.facts["steps"].get_int64().value(), 16);
  const OverrideOutcome* o = outcome(p.run, "compile");
  ASSERT_NE(o, nullptr);
  EXPECT_TRUE(o->applied) << o->reason;
}

}  // namespace ts::run::test
