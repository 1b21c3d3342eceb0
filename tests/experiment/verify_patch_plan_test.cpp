// verify --patch's pure parts: which edit each --set setting becomes at which recorded site
// (plain loop, Hugging Face TrainingArguments, Lightning Trainer), the spec the patcher reads, the
// command's script, the command in the copy, the runs' own spread and the reproduce rule.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "experiment/patch_apply.h"
#include "experiment/patch_plan.h"
#include "experiment/verify.h"

namespace ts::experiment {
namespace {

diagnose::CodeSite site(const std::string& role, const std::string& file, int64_t line, const std::string& detail = "") {
  diagnose::CodeSite s;
  s.role = role;
  s.file = file;
  s.line = line;
  s.detail = detail;
  s.sha1 = "sha-" + file;
  s.calls = 1;
  return s;
}

const PatchEdit* find(const PatchPlan& p, const std::string& op, const std::string& file) {
  for (const auto& e : p.edits)
    if (e.op == op && e.file == file) return &e;
  return nullptr;
}

TEST(PatchPlan, PlainLoopSettingsGoToTheirSites) {
  diagnose::AgentEvidence ev;
  ev.param_device = "cuda:0";
  ev.sites = {site("dataloader", "/p/data.py", 22), site("optimizer", "/p/train.py", 14),
              site("forward", "/p/train.py", 17), site("h2d", "/p/train.py", 16)};
  PatchPlan plan;
  plan_fix("dataloader-starvation",
           {{"dataloader.num_workers", "6"}, {"dataloader.persistent_workers", "true"}, {"dataloader.pin_memory", "true"},
            {"copy.non_blocking", "true"}},
           ev, "/p/train.py", plan);
  plan_fix("fp32-gemm", {{"autocast", "bf16"}}, ev, "/p/train.py", plan);
  plan_fix("unfused-optimizer", {{"optimizer.fused", "true"}}, ev, "/p/train.py", plan);
  plan_fix("thread-oversubscription", {{"threads", "2"}}, ev, "/p/train.py", plan);
  plan_fix("launch-bound", {{"compile", "reduce-overhead"}}, ev, "/p/train.py", plan);
  EXPECT_TRUE(plan.notes.empty());
  // the three DataLoader keywords are one edit of the one call
  const PatchEdit* dl = find(plan, "keywords", "/p/data.py");
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->call, "loader");
  EXPECT_EQ(dl->line, 22);
  EXPECT_EQ(dl->sha1, "sha-/p/data.py");
  std::vector<std::pair<std::string, std::string>> kw = {{"num_workers", "6"}, {"persistent_workers", "True"}, {"pin_memory", "True"}};
  EXPECT_EQ(dl->keywords, kw);
  int copies = 0, wraps = 0, compiles = 0, threads = 0, optim = 0;
  for (const auto& e : plan.edits) {
    if (e.call == "copy") {
      ++copies;
      EXPECT_EQ(e.line, 16);
    }
    if (e.op == "wrap") {
      ++wraps;
      EXPECT_EQ(e.with, "torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)");
    }
    if (e.op == "compile") {
      ++compiles;
      EXPECT_EQ(e.value, "reduce-overhead");
    }
    if (e.op == "threads") {
      ++threads;
      EXPECT_EQ(e.value, "2");
      EXPECT_EQ(e.sha1, "sha-/p/train.py");
    }
    if (e.call == "optimizer") {
      ++optim;
      EXPECT_EQ(e.keywords.at(0), (std::pair<std::string, std::string>{"fused", "True"}));
    }
  }
  EXPECT_EQ(copies + wraps + compiles + threads + optim, 5);
  EXPECT_EQ(copies * wraps * compiles * threads * optim, 1);
}

TEST(PatchPlan, FrameworksTakeTheirKnobs) {
  diagnose::AgentEvidence hf;
  hf.sites = {site("config", "/p/train.py", 33, "transformers.TrainingArguments"), site("dataloader", "/p/train.py", 37)};
  PatchPlan plan;
  plan_fix("dataloader-starvation", {{"dataloader.num_workers", "4"}, {"dataloader.persistent_workers", "true"}}, hf, "", plan);
  plan_fix("fp32-gemm", {{"autocast", "bf16"}}, hf, "", plan);
  plan_fix("unfused-optimizer", {{"optimizer.fused", "true"}, {"optimizer.foreach", "true"}}, hf, "", plan);
  plan_fix("launch-bound", {{"compile", "true"}}, hf, "", plan);
  ASSERT_EQ(plan.edits.size(), 1u);  // all on the TrainingArguments(...) call
  const auto& e = plan.edits[0];
  EXPECT_EQ(e.call, "training_args");
  EXPECT_EQ(e.line, 33);
  std::vector<std::pair<std::string, std::string>> kw = {{"dataloader_num_workers", "4"},
                                                         {"dataloader_persistent_workers", "True"},
                                                         {"bf16", "True"},
                                                         {"optim", "\"adamw_torch_fused\""},
                                                         {"torch_compile", "True"}};
  EXPECT_EQ(e.keywords, kw);
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_EQ(plan.notes[0].rfind("optimizer.foreach: ", 0), 0u) << plan.notes[0];

  diagnose::AgentEvidence pl;
  pl.sites = {site("config", "/p/train.py", 40, "lightning.Trainer"), site("dataloader", "/p/train.py", 24)};
  PatchPlan p2;
  plan_fix("dataloader-starvation", {{"dataloader.num_workers", "4"}}, pl, "", p2);
  plan_fix("fp32-gemm", {{"autocast", "bf16"}}, pl, "", p2);
  plan_fix("launch-bound", {{"compile", "true"}}, pl, "", p2);
  ASSERT_EQ(p2.edits.size(), 2u);
  EXPECT_EQ(p2.edits[0].call, "loader");  // the DataModule's DataLoader line
  EXPECT_EQ(p2.edits[0].line, 24);
  EXPECT_EQ(p2.edits[1].call, "trainer");
  EXPECT_EQ(p2.edits[1].keywords.at(0), (std::pair<std::string, std::string>{"precision", "\"bf16-mixed\""}));
  ASSERT_EQ(p2.notes.size(), 1u);
  EXPECT_EQ(p2.notes[0].rfind("compile: ", 0), 0u);
}

// TrainingArguments that HfArgumentParser builds from the command line (transformers' example
// scripts): the line that calls the parser has no keyword to write; each knob is a note that says
// where it goes, once, and the plan has no edit.
TEST(PatchPlan, SettingsAnArgumentParserReadsAreNotes) {
  diagnose::AgentEvidence hf;
  hf.sites = {site("config", "/p/run_clm.py", 292, "transformers.TrainingArguments"), site("dataloader", "/p/run_clm.py", 37)};
  hf.sites[0].parsed_from = "argv";
  PatchPlan plan;
  plan_fix("dataloader-starvation", {{"dataloader.num_workers", "4"}, {"dataloader.persistent_workers", "true"}}, hf, "", plan);
  plan_fix("fp32-gemm", {{"autocast", "bf16"}}, hf, "", plan);
  plan_fix("dataloader-starvation", {{"dataloader.num_workers", "4"}}, hf, "", plan);
  EXPECT_TRUE(plan.edits.empty());
  ASSERT_EQ(plan.notes.size(), 3u);
  EXPECT_EQ(plan.notes[0].rfind("dataloader_num_workers: an argument parser builds these settings from the command "
                                "line at run_clm.py:292", 0), 0u) << plan.notes[0];
  EXPECT_EQ(plan.notes[1].rfind("dataloader_persistent_workers: ", 0), 0u) << plan.notes[1];
  EXPECT_EQ(plan.notes[2].rfind("bf16: ", 0), 0u) << plan.notes[2];
}

TEST(PatchPlan, AnomalyDetectionIsTurnedOffWhereItWasTurnedOn) {
  diagnose::AgentEvidence ev;
  ev.sites = {site("anomaly", "/p/train.py", 3)};
  PatchPlan plan;
  plan_fix("anomaly-detection", {{"autograd.detect_anomaly", "false"}}, ev, "/p/train.py", plan);
  EXPECT_TRUE(plan.notes.empty());
  const PatchEdit* e = find(plan, "anomaly", "/p/train.py");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 3);
  // Lightning's Trainer(detect_anomaly=True): its knob, at the Trainer line.
  diagnose::CodeSite pl = site("config", "/p/fit.py", 20, "lightning.Trainer");
  pl.knobs = {{"detect_anomaly", "1"}};
  ev.sites = {pl, site("anomaly", "/p/fit.py", 21)};
  PatchPlan lit;
  plan_fix("anomaly-detection", {{"autograd.detect_anomaly", "false"}}, ev, "/p/fit.py", lit);
  const PatchEdit* k = find(lit, "keywords", "/p/fit.py");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->call, "trainer");
  std::vector<std::pair<std::string, std::string>> kw = {{"detect_anomaly", "False"}};
  EXPECT_EQ(k->keywords, kw);
  EXPECT_EQ(find(lit, "anomaly", "/p/fit.py"), nullptr);
}

TEST(PatchPlan, NoSiteIsANoteNotAnEdit) {
  diagnose::AgentEvidence ev;
  PatchPlan plan;
  plan_fix("x", {{"dataloader.num_workers", "4"}, {"copy.non_blocking", "true"}, {"threads", "2"}}, ev, "", plan);
  EXPECT_TRUE(plan.edits.empty());
  EXPECT_EQ(plan.notes.size(), 3u);
}

// zero_grad.set_to_none=false is measured by --set but never written: the patcher's edit puts
// set_to_none=True on every call, so a false value is a note, not an edit that says the opposite.
TEST(PatchPlan, SetToNoneFalseIsANoteNotATrueEdit) {
  diagnose::AgentEvidence ev;
  ev.sites = {site("forward", "/p/train.py", 17)};
  PatchPlan plan;
  plan_fix("x", {{"zero_grad.set_to_none", "false"}}, ev, "/p/train.py", plan);
  EXPECT_TRUE(plan.edits.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("set_to_none=True only"), std::string::npos) << plan.notes[0];
  PatchPlan on;
  plan_fix("x", {{"zero_grad.set_to_none", "true"}}, ev, "/p/train.py", on);
  ASSERT_EQ(on.edits.size(), 1u);
  EXPECT_EQ(on.edits[0].op, "zero_grad");
}

TEST(PatchPlan, SpecIsTheJsonThePatcherReads) {
  PatchEdit e;
  e.fix = "f";
  e.op = "keywords";
  e.file = "/p/a \"b\".py";
  e.line = 3;
  e.sha1 = "abc";
  e.call = "loader";
  e.keywords = {{"num_workers", "4"}};
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(patch_spec_json("/p", "/o/fix.diff", {e})).value();
  EXPECT_EQ(std::string_view(doc["root"].get_string().value()), "/p");
  EXPECT_EQ(std::string_view(doc["out"].get_string().value()), "/o/fix.diff");
  simdjson::dom::element x = doc["edits"].at(0).value();
  EXPECT_EQ(std::string_view(x["file"].get_string().value()), "/p/a \"b\".py");
  EXPECT_EQ(x["line"].get_int64().value(), 3);
  EXPECT_EQ(std::string_view(x["keywords"].at(0).at(1).get_string().value()), "4");
}

TEST(PatchPlan, CommandScriptAndCopy) {
  EXPECT_EQ(command_script({"python", "train.py", "--lr", "1"}, "/p"), "/p/train.py");
  EXPECT_EQ(command_script({"torchrun", "--nproc-per-node", "2", "src/../train.py"}, "/p"), "/p/train.py");
  EXPECT_EQ(command_script({"python", "-m", "pkg.train"}, "/p"), "");
  EXPECT_EQ(command_in_copy({"/usr/bin/python3", "/p/train.py", "train.py", "/p"}, "/p", "/c"),
            (std::vector<std::string>{"/usr/bin/python3", "/c/train.py", "train.py", "/c"}));
}

TEST(PatchPlan, SpreadAndReproduce) {
  // 64 steps of 10 ms, but for one slow eighth (20 ms) and one fast eighth (5 ms): both left out.
  std::vector<run::StepRecord> steps;
  int64_t t = 0;
  for (int64_t s = 0; s <= 64; ++s) {
    int64_t ms = s >= 1 && s <= 8 ? 20 : s >= 57 ? 5 : 10;
    if (s > 0) t += ms;
    run::StepRecord r;
    r.step = s;
    r.t_end_ns = t * 1'000'000;
    steps.push_back(r);
  }
  EXPECT_NEAR(block_spread(steps, 1, 64), 0.0, 1e-9);
  EXPECT_EQ(block_spread(steps, 1, 10), -1);  // too few steps to cut into eighths
  EXPECT_TRUE(patch_reproduces(12.9, 10, 0.3));
  EXPECT_FALSE(patch_reproduces(13.1, 10, 0.3));
  EXPECT_TRUE(patch_reproduces(4, 10, 0.3));  // faster: the gain is there
  EXPECT_FALSE(patch_reproduces(-1, 10, 0.3));
}

// The patched copy runs at <out>/patched/project: a script that opens '../data' (as every
// pytorch/examples MNIST script does, datasets.MNIST('../data', ...)) must read the original's
// sibling there, not an empty folder it then tries to download into.
TEST(PatchCopy, SiblingsOfTheProjectAreLinkedBesideTheCopy) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ts-siblings-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "examples" / "vae");
  fs::create_directories(root / "examples" / "data" / "MNIST");
  std::ofstream(root / "examples" / "data" / "MNIST" / "raw.bin") << "bytes";
  std::ofstream(root / "examples" / "vae" / "main.py") << "open('../data/MNIST/raw.bin')\n";
  fs::create_directories(root / "examples" / "run");  // a sibling named like verify's own folder
  const fs::path out = root / "out" / "patched";
  ASSERT_EQ(copy_project(root / "examples" / "vae", out / "project", {}), "");
  EXPECT_EQ(link_siblings(root / "examples" / "vae", out / "project", {"project", "run", "run-2"}), 1);
  EXPECT_TRUE(fs::is_symlink(out / "data"));
  std::ifstream in(out / "project" / ".." / "data" / "MNIST" / "raw.bin");
  std::string got;
  in >> got;
  EXPECT_EQ(got, "bytes");
  EXPECT_FALSE(fs::exists(out / "vae"));  // the project itself: the copy stands for it
  EXPECT_FALSE(fs::is_symlink(out / "run"));  // reserved for verify's runs
  // A second call links nothing twice; a project at the root's top gets no links of "/".
  EXPECT_EQ(link_siblings(root / "examples" / "vae", out / "project", {"project", "run", "run-2"}), 0);
  EXPECT_EQ(link_siblings("/tmp", root / "top" / "project", {}), 0);
  fs::remove_all(root);
}

// Lightning's examples (examples/pytorch/basics/autoencoder.py) read
// path.join(path.dirname(__file__), "..", "..", "Datasets"): the copy sits under the original's
// parents' names, each level beside links to that level's other entries, so a path two levels up
// reads the original's files, and one that climbs back in by name reads the copy.
TEST(PatchCopy, ACopyUnderItsParentsNamesReadsWhatTheOriginalReadsLevelsUp) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ts-ancestors-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path proj = root / "repo" / "examples" / "basics";
  fs::create_directories(proj);
  fs::create_directories(root / "repo" / "Datasets");
  fs::create_directories(root / "repo" / ".git");  // the user's repository: never linked
  fs::create_directories(root / "repo" / "examples" / "data");
  std::ofstream(root / "repo" / "Datasets" / "raw.bin") << "bytes";
  std::ofstream(proj / "main.py") << "original\n";
  fs::create_directory_symlink(root / "repo" / "Datasets", proj / "data");  // a link in the project stays a link
  const fs::path tree = root / "out" / "patched" / "tree";
  const fs::path copy = mirrored_copy_path(proj, tree, 3);
  EXPECT_EQ(copy, tree / "repo" / "examples" / "basics");
  EXPECT_EQ(mirrored_copy_path("/opt", tree, 3), tree / "opt");  // nearer "/": fewer names
  ASSERT_EQ(copy_project(proj, copy, {}), "");
  std::ofstream(copy / "main.py") << "patched\n";
  EXPECT_EQ(link_ancestors(proj, copy, 3), 3);  // data; Datasets; out (the root's other entry)
  std::string got;
  std::ifstream(copy / ".." / ".." / "Datasets" / "raw.bin") >> got;
  EXPECT_EQ(got, "bytes");
  EXPECT_TRUE(fs::is_symlink(tree / "repo" / "examples" / "data"));
  got.clear();
  std::ifstream(copy / ".." / "basics" / "main.py") >> got;  // back in by name: the copy
  EXPECT_EQ(got, "patched");
  EXPECT_FALSE(fs::exists(tree / "repo" / ".git"));
  EXPECT_TRUE(fs::is_symlink(copy / "data"));
  got.clear();
  std::ifstream(copy / "data" / "raw.bin") >> got;
  EXPECT_EQ(got, "bytes");
  fs::remove_all(root);
}

}  // namespace
}  // namespace ts::experiment
