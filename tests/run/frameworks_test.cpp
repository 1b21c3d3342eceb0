// The frameworks people train with, under `trainscope run --steps N` on PyTorch 2.x (issue 31):
// Hugging Face Trainer, Lightning's Trainer.fit and LightningCLI, an accelerate loop and a torch.compile'd loop
// (tests/run/scripts/frameworks/, compile_case.py). Each must have its steps found and be stopped
// at N, the settings the framework applied read back (precision, DataLoader workers, pin_memory),
// and `--set` must reach the DataLoader the framework builds or wraps.
#include <gtest/gtest.h>

#include <string>

#include "run_test_util.h"
#include "support/torch_python.h"

namespace ts::run::test {
namespace {

bool has_module(const std::string& m) {
  std::string cmd = "'" + torch_python() + "' -c 'import " + m + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

#define REQUIRE_FRAMEWORK(module)                                                                          \
  if (torch_python().empty()) GTEST_FAIL() << "no Python with torch (scripts/bootstrap makes .venv)";      \
  if (!has_module(module)) GTEST_FAIL() << module << " is not installed for " << torch_python()            \
                                        << " (scripts/bootstrap installs requirements/torch2.txt)"

std::string fw(const std::string& name) { return scripts_dir() + "/frameworks/" + name; }

RunResult run_fw(std::vector<std::string> cmd, const std::string& name, int64_t steps,
                 std::vector<Override> set = {}) {
  RunOptions opt;
  opt.command = std::move(cmd);
  opt.out_dir = fresh_dir("fw-" + name);
  opt.profile = true;
  opt.profile_first = 3, opt.profile_last = 4;
  opt.store = false;
  opt.quiet = true;
  opt.steps = steps;
  opt.overrides = std::move(set);
  return run_session(opt);
}

// Exit 0, stopped by --steps at n, the steps counted at optimizer.step().
void expect_stopped_at(const RunResult& r, int64_t n) {
  EXPECT_EQ(r.exit.shell_code(), 0);
  EXPECT_TRUE(r.stopped_by_steps);
  EXPECT_EQ(r.agent.evidence.steps, n);
  EXPECT_EQ(r.agent.evidence.step_source, "optimizer");
}

// The agent says it applied the --set `key`.
void expect_applied(const RunResult& r, const std::string& key) {
  const OverrideOutcome* o = nullptr;
  for (const auto& x : r.overrides)
    if (x.key == key) o = &x;
  ASSERT_NE(o, nullptr) << key << ": no outcome";
  EXPECT_TRUE(o->applied) << key << ": " << o->reason;
}

// transformers' Trainer builds the DataLoader itself (dataloader_num_workers=0 and
// dataloader_pin_memory=False in TrainingArguments); --set must change the one it builds.
TEST(Frameworks, HuggingFaceTrainer) {
  REQUIRE_FRAMEWORK("transformers");
  std::string dir = fresh_dir("fw-hf-out");
  auto r = run_fw({torch_python(), fw("hf_trainer.py"), "40", "0", dir}, "hf", 8, {{"dataloader.num_workers", "2"}});
  const auto& e = r.agent.evidence;
  expect_stopped_at(r, 8);
  EXPECT_EQ(e.optimizer, "AdamW");  // the Trainer's default optimizer (adamw_torch)
  EXPECT_EQ(e.param_dtype, "torch.float32");
  EXPECT_EQ(e.autocast_dtype, "");  // fp32: no mixed precision asked for
  ASSERT_FALSE(e.loaders.empty());
  EXPECT_EQ(e.loaders[0].num_workers, 2) << "--set did not reach the Trainer's DataLoader";
  EXPECT_FALSE(e.loaders[0].pin_memory);
  EXPECT_EQ(e.loaders[0].batch_size, 8);
  expect_applied(r, "dataloader.num_workers");
  EXPECT_GT(e.step_ms, 0.0);
  EXPECT_GT(e.forward_ms + e.backward_ms, 0.0);
}

// Lightning runs forward and backward inside optimizer.step(closure) and moves batches itself;
// bf16-mixed enters CPU autocast around the training step.
TEST(Frameworks, LightningFit) {
  REQUIRE_FRAMEWORK("lightning");
  auto r = run_fw({torch_python(), fw("lightning_fit.py"), "40", "0", "bf16-mixed"}, "lightning", 8,
                  {{"dataloader.num_workers", "1"}});
  const auto& e = r.agent.evidence;
  expect_stopped_at(r, 8);
  EXPECT_EQ(e.optimizer, "AdamW");
  EXPECT_EQ(e.autocast_dtype, "torch.bfloat16") << "Lightning's precision='bf16-mixed' not read back";
  ASSERT_FALSE(e.loaders.empty());
  EXPECT_EQ(e.loaders[0].num_workers, 1);
  EXPECT_EQ(e.loaders[0].batch_size, 32);
  expect_applied(r, "dataloader.num_workers");
  // Forward and backward inside the closure are theirs, not the optimizer's.
  EXPECT_GT(e.forward_ms, 0.0);
  EXPECT_GT(e.backward_ms, 0.0);
}

// LightningCLI builds the Trainer from the command line: the configuration site is the
// LightningCLI(...) line (run twice: it writes no config.yaml that a second run refuses), its settings read back from the Trainer it built, and recorded as the
// command line's (parsed_from "argv"): a fix to them is a `--trainer.<name>` flag, not that line's.
TEST(Frameworks, LightningCliSettingsComeFromTheCommandLine) {
  REQUIRE_FRAMEWORK("lightning");
  REQUIRE_FRAMEWORK("jsonargparse");
  auto r = run_fw({torch_python(), fw("lightning_cli.py"), "fit", "--trainer.max_steps", "40", "--trainer.logger",
                   "false", "--trainer.enable_checkpointing", "false", "--trainer.enable_progress_bar", "false"},
                  "lightning-cli", 8);
  expect_stopped_at(r, 8);
  const diagnose::CodeSite* cfg = nullptr;
  for (const auto& s : r.agent.evidence.sites)
    if (s.role == "config") cfg = &s;
  ASSERT_NE(cfg, nullptr) << "no configuration site";
  EXPECT_EQ(cfg->code, "LightningCLI(Model, save_config_callback=None)");
  EXPECT_EQ(cfg->parsed_from, "argv");
  EXPECT_EQ(cfg->knob("max_steps"), "40");
  EXPECT_EQ(cfg->detail.rfind("lightning", 0), 0u) << cfg->detail;
}

// accelerate wraps the DataLoader (DataLoaderShard) and enters autocast inside forward.
TEST(Frameworks, AccelerateLoop) {
  REQUIRE_FRAMEWORK("accelerate");
  auto r = run_fw({torch_python(), fw("accelerate_loop.py"), "40", "0", "bf16"}, "accelerate", 8,
                  {{"dataloader.num_workers", "1"}});
  const auto& e = r.agent.evidence;
  expect_stopped_at(r, 8);
  EXPECT_EQ(e.optimizer, "AdamW");
  EXPECT_EQ(e.autocast_dtype, "torch.bfloat16") << "accelerate's mixed_precision='bf16' not read back";
  ASSERT_FALSE(e.loaders.empty());
  EXPECT_EQ(e.loaders[0].num_workers, 1) << "--set did not reach the DataLoader accelerate prepared";
  expect_applied(r, "dataloader.num_workers");
}

// A torch.compile'd loop (inductor) stopped by --steps: compiled once, stopped at N, exit 0.
TEST(Frameworks, CompiledLoopStopsAtSteps) {
  if (torch_python().empty()) GTEST_FAIL() << "no Python with torch (scripts/bootstrap makes .venv)";
  if (!ts::test::torch_at_least(2, 0)) GTEST_FAIL() << "torch.compile needs PyTorch 2.x";
  std::string json = fresh_dir("fw-compiled-json") + "/c.json";
  auto r = run_fw({torch_python(), scripts_dir() + "/compile_case.py", "inductor", "module", "40", json}, "compiled", 6);
  const auto& e = r.agent.evidence;
  expect_stopped_at(r, 6);
  EXPECT_TRUE(e.compiled);
  EXPECT_EQ(e.optimizer, "AdamW");
}

}  // namespace
}  // namespace ts::run::test
