// torch.compile under `trainscope run` (issue 31): on an H100 the model compiled twice under the
// agent (Dynamo's unique_graphs 2 and calls_captured 12 against 1 and 6 without it). Here, on the
// CPU with PyTorch 2.x, scripts/compile_case.py runs the same seeded loop plain and under the
// agent for the inductor (gcc), aot_eager and eager backends and three ways of compiling; the
// Dynamo counters and every loss must be equal, and trainscope must still find and count steps.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <string>

#include "run_test_util.h"
#include "support/torch_python.h"

namespace ts::run::test {
namespace {

struct Counters {
  int64_t graphs = -1, calls = -1, breaks = -1;
  std::vector<double> losses;
};

Counters read_counters(const std::string& path) {
  Counters c;
  simdjson::ondemand::parser p;
  auto json = simdjson::padded_string::load(path);
  if (json.error()) return c;
  auto doc = p.iterate(json.value());
  c.graphs = doc["unique_graphs"].get_int64().value();
  c.calls = doc["calls_captured"].get_int64().value();
  c.breaks = doc["graph_breaks"].get_int64().value();
  for (auto v : doc["losses"].get_array()) c.losses.push_back(v.get_double().value());
  return c;
}

void same_compile(const std::string& backend, const std::string& form) {
  if (torch_python().empty()) GTEST_FAIL() << "no Python with torch (scripts/bootstrap makes .venv)";
  if (!ts::test::torch_at_least(2, 0)) GTEST_FAIL() << "torch.compile needs PyTorch 2.x (" << ts::test::torch_version() << ")";
  constexpr int kSteps = 8;
  std::string dir = fresh_dir("compile-" + backend + "-" + form);
  std::string script = scripts_dir() + "/compile_case.py";
  std::string plain_json = dir + "/plain.json", agent_json = dir + "/agent.json";
  std::string cmd = "'" + torch_python() + "' '" + script + "' " + backend + " " + form + " " +
                    std::to_string(kSteps) + " '" + plain_json + "' >'" + dir + "/plain.log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/plain.log");
  // Under the agent, with the profiler window inside the run (steps 3-5): the window too must
  // leave Dynamo's guards alone.
  RunOptions opt;
  opt.command = {torch_python(), script, backend, form, std::to_string(kSteps), agent_json};
  opt.out_dir = dir + "/run";
  opt.profile = true;
  opt.profile_first = 3, opt.profile_last = 5;
  opt.store = false;
  opt.quiet = true;
  auto r = run_session(opt);
  ASSERT_EQ(r.exit.shell_code(), 0);
  Counters plain = read_counters(plain_json), agent = read_counters(agent_json);
  ASSERT_GE(plain.graphs, 1) << "the plain run compiled nothing: " << slurp(dir + "/plain.log");
  EXPECT_EQ(agent.graphs, plain.graphs) << "trainscope made Dynamo compile again";
  EXPECT_EQ(agent.calls, plain.calls);
  EXPECT_EQ(agent.breaks, plain.breaks);
  EXPECT_EQ(agent.breaks, 0);
  ASSERT_EQ(agent.losses.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(agent.losses, plain.losses);  // bit for bit: the same computation
  // And trainscope still sees the loop: every optimizer step, with its time.
  const auto& e = r.agent.evidence;
  EXPECT_EQ(e.step_source, "optimizer");
  EXPECT_EQ(e.steps, kSteps);
  EXPECT_GT(e.step_ms, 0.0);
  EXPECT_TRUE(e.compiled) << "the model record says whether torch.compile was used";
}

TEST(Compile, InductorModuleCompilesOnce) { same_compile("inductor", "module"); }
TEST(Compile, AotEagerModuleCompilesOnce) { same_compile("aot_eager", "module"); }
TEST(Compile, EagerModuleCompilesOnce) { same_compile("eager", "module"); }
TEST(Compile, AotEagerInPlaceModuleCompileCompilesOnce) { same_compile("aot_eager", "method"); }
TEST(Compile, AotEagerCompiledFunctionCompilesOnce) { same_compile("aot_eager", "function"); }

}  // namespace
}  // namespace ts::run::test
