#pragma once
// verify --patch: the edits that make each measured fix permanent, at the lines of the user's code
// the agent recorded (evidence.h CodeSite), as the spec the agent's patcher reads
// (agent/trainscope_agent/patch.py; docs/AGENT.md "How sites become edits").
#include <string>
#include <utility>
#include <vector>

#include "diagnose/evidence.h"
#include "run/overrides.h"

namespace ts::experiment {

struct PatchEdit {
  std::string fix;    // the finding id whose fix this is
  std::string op;     // keywords | wrap | compile | threads | zero_grad (patch.py's ops)
  std::string file, sha1;
  int64_t line = 0;
  std::string call;   // keywords: loader | optimizer | training_args | trainer | copy
  std::vector<std::pair<std::string, std::string>> keywords;  // name, Python value
  std::string with;   // wrap: the context manager's expression
  std::string value;  // threads: N; compile: the mode ("" default)
  // keywords: the site's function, and the user's line that called it (CodeSite's caller): where a
  // keyword the call takes from that function's parameters or **kwargs is set instead (patch.py).
  std::string func, caller_file, caller_sha1;
  int64_t caller_line = 0;
};

struct PatchPlan {
  std::vector<PatchEdit> edits;
  std::vector<std::string> notes;  // a setting with no line to write it at, and why (one line each)
};

// The edits for one fix's settings. A Hugging Face TrainingArguments(...) line takes the
// DataLoader, precision, optimizer and compile knobs (the Trainer builds those itself); Lightning's
// Trainer(...) takes the precision; otherwise the DataLoader, optimizer, forward and copy lines.
// `script`: the absolute path of the command's script ("" none), where set_num_threads goes.
void plan_fix(const std::string& fix, const std::vector<run::Override>& settings, const diagnose::AgentEvidence& ev,
              const std::string& script, PatchPlan& plan);

// The patcher's input: {"root", "out", "edits": [...]}.
std::string patch_spec_json(const std::string& root, const std::string& out, const std::vector<PatchEdit>& edits);

// The command's script: the first argument ending in ".py" (after a python interpreter or a
// launcher such as torchrun), absolute against `cwd`; "" when there is none (`python -m pkg`).
std::string command_script(const std::vector<std::string>& command, const std::string& cwd);

}  // namespace ts::experiment
