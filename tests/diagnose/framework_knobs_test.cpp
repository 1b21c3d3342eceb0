// A framework's setting written where the user sets it (rules/framework_knobs.cpp): at their own
// TrainingArguments(...)/Trainer(...) line, or as the flag or file key of the argument parser that
// builds it (HfArgumentParser in Hugging Face's example scripts, LightningCLI). Expected texts are
// the parsers' own syntax: HfArgumentParser makes `--field value` of each dataclass field and reads
// bools with string_to_bool ("True"); LightningCLI takes `--trainer.field value` (jsonargparse).
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "diagnose/evidence_fixtures.h"

namespace ts::diagnose {
namespace {

using test::code_site;
using test::find;
using test::starved_loop;
using test::trace_with_steps;
using rules::KnobFix;
using rules::knob_code;
using rules::knob_note;

CodeSite config(const std::string& detail, const std::string& parsed_from) {
  CodeSite s = code_site("config", "/p/run_clm.py", 292);
  s.detail = detail;
  s.parsed_from = parsed_from;
  return s;
}

const KnobFix kWorkers{{{"dataloader_num_workers", "4"}, {"dataloader_persistent_workers", "True"}}, ""};

TEST(FrameworkKnobs, AtTheUsersOwnLine) {
  const CodeSite hf = config("transformers.TrainingArguments", "");
  EXPECT_EQ(knob_note(hf, kWorkers), "set dataloader_num_workers=4, dataloader_persistent_workers=True here");
  EXPECT_EQ(knob_note(hf, {{{"per_device_train_batch_size", ""}}, ""}), "set per_device_train_batch_size here");
  EXPECT_EQ(knob_note(hf, {{}, "no change to dataloader_num_workers"}), "no change to dataloader_num_workers here");
  EXPECT_EQ(knob_note(hf, {{{"gradient_accumulation_steps", "K"}}, "the Trainer syncs on the K-th"}),
            "set gradient_accumulation_steps=K here: the Trainer syncs on the K-th");
  Evidence ev;
  EXPECT_EQ(knob_code(ev, hf, kWorkers.set),
            "args = TrainingArguments(..., dataloader_num_workers=4, dataloader_persistent_workers=True)");
  EXPECT_EQ(knob_code(ev, hf, {{"dataloader_num_workers", ""}}), "args = TrainingArguments(..., dataloader_num_workers=N)");
  const CodeSite pl = config("lightning.Trainer", "");
  EXPECT_EQ(knob_code(ev, pl, {{"precision", "\"bf16-mixed\""}}), "trainer = Trainer(..., precision=\"bf16-mixed\")");
}

TEST(FrameworkKnobs, OnTheCommandLineAnArgumentParserReads) {
  const CodeSite hf = config("transformers.TrainingArguments", "argv");
  EXPECT_EQ(knob_note(hf, kWorkers),
            "pass --dataloader_num_workers 4 --dataloader_persistent_workers True on the command line "
            "(HfArgumentParser builds TrainingArguments from it here)");
  EXPECT_EQ(knob_note(hf, {{{"optim", "\"adamw_torch_fused\""}}, ""}),
            "pass --optim adamw_torch_fused on the command line (HfArgumentParser builds TrainingArguments from it "
            "here)");
  Evidence ev;
  EXPECT_EQ(knob_code(ev, hf, {{"dataloader_num_workers", ""}}), "python train.py ... --dataloader_num_workers N");
  // The user's own command (redacted as the run recorded it), quoted for a shell, with the flags added.
  JobEvidence job;
  job.command = {"python", "run_clm.py", "--config_overrides", "n_embd=256,n_layer=4", "--output_dir", "my out"};
  ev.job = job;
  EXPECT_EQ(knob_code(ev, hf, kWorkers.set),
            "python run_clm.py --config_overrides n_embd=256,n_layer=4 --output_dir 'my out' "
            "--dataloader_num_workers 4 --dataloader_persistent_workers True");
  const CodeSite pl = config("lightning.Trainer", "argv");
  EXPECT_EQ(knob_note(pl, {{{"precision", "\"bf16-mixed\""}}, ""}),
            "pass --trainer.precision bf16-mixed on the command line (LightningCLI builds the Trainer from it here)");
  EXPECT_EQ(knob_note(pl, {{{"accumulate_grad_batches", "K"}, {"enable_checkpointing", "False"}}, "why"}),
            "pass --trainer.accumulate_grad_batches K --trainer.enable_checkpointing false on the command line "
            "(LightningCLI builds the Trainer from it here): why");
}

TEST(FrameworkKnobs, InTheFileTheParserReads) {
  const CodeSite json = config("transformers.TrainingArguments", "json");
  const KnobFix mixed{{{"bf16", "True"}, {"optim", "\"adamw_torch_fused\""}, {"dataloader_num_workers", "4"}}, ""};
  EXPECT_EQ(knob_note(json, mixed),
            "set \"bf16\": true, \"optim\": \"adamw_torch_fused\", \"dataloader_num_workers\": 4 in the JSON file this "
            "line reads");
  Evidence ev;
  EXPECT_EQ(knob_code(ev, json, mixed.set),
            "{..., \"bf16\": true, \"optim\": \"adamw_torch_fused\", \"dataloader_num_workers\": 4}");
  const CodeSite yaml = config("transformers.TrainingArguments", "yaml");
  EXPECT_EQ(knob_code(ev, yaml, mixed.set), "bf16: true\noptim: adamw_torch_fused\ndataloader_num_workers: 4");
}

// A rule's fix under HfArgumentParser: a loop that waits 70 of every 100 ms for its loader
// (starved_loop: 32 samples x 2 ms, num_workers=0, 8 idle cores) names the flags on the script's command line at the
// parser's line, and its code is the user's command with them.
TEST(FrameworkKnobs, AFindingUnderHfArgumentParserGivesTheCommand) {
  Evidence ev = starved_loop();
  ev.agent->sites = {config("transformers.TrainingArguments", "argv")};
  JobEvidence job;
  job.command = {"python", "run_clm.py", "--do_train"};
  ev.job = job;
  Diagnosis d = diagnose(ev);
  const Finding* f = find(d, "dataloader-starvation");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->sites.empty());
  EXPECT_EQ(f->sites[0].role, "config");
  EXPECT_EQ(f->sites[0].note.rfind("pass --dataloader_num_workers ", 0), 0u) << f->sites[0].note;
  EXPECT_NE(f->sites[0].note.find("--dataloader_persistent_workers True"), std::string::npos) << f->sites[0].note;
  EXPECT_EQ(f->fix_code.rfind("python run_clm.py --do_train --dataloader_num_workers ", 0), 0u) << f->fix_code;
  // The same TrainingArguments built at the user's own line: the knobs there, as code.
  ev.agent->sites[0].parsed_from = "";
  d = diagnose(ev);
  f = find(d, "dataloader-starvation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->sites[0].note.rfind("set dataloader_num_workers=", 0), 0u) << f->sites[0].note;
  EXPECT_EQ(f->fix_code.rfind("args = TrainingArguments(..., dataloader_num_workers=", 0), 0u) << f->fix_code;
}

}  // namespace
}  // namespace ts::diagnose
