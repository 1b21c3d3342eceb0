#include "experiment/patch_plan.h"

#include <filesystem>

#include "util/json_writer.h"

namespace ts::experiment {
namespace {

bool truthy(const std::string& v) { return v == "true" || v == "1" || v == "yes" || v == "on"; }
std::string py_bool(const std::string& v) { return truthy(v) ? "True" : "False"; }

const diagnose::CodeSite* config_site(const diagnose::AgentEvidence& ev, const std::string& framework) {
  for (const auto& s : ev.sites)
    if (s.role == "config" && !s.file.empty() && s.detail.rfind(framework, 0) == 0) return &s;
  return nullptr;
}

PatchEdit at(const std::string& fix, const std::string& op, const diagnose::CodeSite& s) {
  PatchEdit e;
  e.fix = fix;
  e.op = op;
  e.file = s.file;
  e.sha1 = s.sha1;
  e.line = s.line;
  e.func = s.function;
  e.caller_file = s.caller_file;
  e.caller_sha1 = s.caller_sha1;
  e.caller_line = s.caller_line;
  return e;
}

// Adds keywords to the edit of the same call when the plan has one (num_workers and
// persistent_workers go into one DataLoader(...)).
void keywords_at(PatchPlan& plan, const std::string& fix, const diagnose::CodeSite& s, const std::string& call,
                 const std::string& name, const std::string& value) {
  if (!s.parsed_from.empty()) {  // HfArgumentParser / LightningCLI build it: a flag or a file's key, no line to edit
    const std::string from = s.parsed_from == "argv" ? "the command line" : "the " + s.parsed_from + " file it reads";
    for (const auto& n : plan.notes)
      if (n.rfind(name + ":", 0) == 0) return;
    plan.notes.push_back(name + ": an argument parser builds these settings from " + from + " at " +
                         std::filesystem::path(s.file).filename().string() + ":" + std::to_string(s.line) +
                         ": set it there (the finding's fix names it); no line of your code to patch");
    return;
  }
  for (auto& e : plan.edits)
    if (e.op == "keywords" && e.file == s.file && e.line == s.line && e.call == call) {
      for (const auto& kv : e.keywords)
        if (kv.first == name) return;  // the first fix's value wins, as in verify's "all" run
      e.keywords.emplace_back(name, value);
      return;
    }
  PatchEdit e = at(fix, "keywords", s);
  e.call = call;
  e.keywords.emplace_back(name, value);
  plan.edits.push_back(std::move(e));
}

// A file's hash as the agent recorded it at any site of that file.
std::string recorded_sha1(const diagnose::AgentEvidence& ev, const std::string& file) {
  for (const auto& s : ev.sites)
    if (s.file == file && !s.sha1.empty()) return s.sha1;
  return "";
}

}  // namespace

void plan_fix(const std::string& fix, const std::vector<run::Override>& settings, const diagnose::AgentEvidence& ev,
              const std::string& script, PatchPlan& plan) {
  const diagnose::CodeSite* hf = config_site(ev, "transformers");
  const diagnose::CodeSite* pl = config_site(ev, "lightning");
  auto none = [&](const std::string& key, const std::string& why) { plan.notes.push_back(key + ": " + why); };
  for (const auto& [key, value] : settings) {
    if (key.rfind("dataloader.", 0) == 0) {
      std::string name = key.substr(11);
      std::string v = name == "num_workers" || name == "prefetch_factor" ? value : py_bool(value);
      if (hf)
        keywords_at(plan, fix, *hf, "training_args", "dataloader_" + name, v);
      else if (const auto* s = ev.site("dataloader"))
        keywords_at(plan, fix, *s, "loader", name, v);
      else
        none(key, "no line of your code built the loop's DataLoader (no site recorded)");
    } else if (key == "copy.non_blocking") {
      int n = 0;
      for (const auto& s : ev.sites)
        if (s.role == "h2d" && !s.file.empty() && s.calls > 0 && n < 8) keywords_at(plan, fix, s, "copy", "non_blocking", py_bool(value)), ++n;
      if (n == 0) none(key, "no host-to-device copy in your code was recorded (a framework's own copies)");
    } else if (key == "autocast") {
      if (hf)
        keywords_at(plan, fix, *hf, "training_args", "bf16", "True");
      else if (pl)
        keywords_at(plan, fix, *pl, "trainer", "precision", "\"bf16-mixed\"");
      else if (const auto* s = ev.site("forward")) {
        PatchEdit e = at(fix, "wrap", *s);
        e.with = std::string("torch.autocast(device_type=\"") +
                 (ev.param_device.rfind("cuda", 0) == 0 ? "cuda" : "cpu") + "\", dtype=torch.bfloat16)";
        plan.edits.push_back(std::move(e));
      } else
        none(key, "no forward call of the model was recorded in your code");
    } else if (key == "compile") {
      std::string mode = truthy(value) || value == "default" ? "" : value;
      if (hf)
        keywords_at(plan, fix, *hf, "training_args", "torch_compile", "True");
      else if (pl)
        none(key, "Lightning has no Trainer knob for it: torch.compile the LightningModule's network where it is built");
      else if (const auto* s = ev.site("forward")) {
        PatchEdit e = at(fix, "compile", *s);
        e.value = mode;
        plan.edits.push_back(std::move(e));
      } else
        none(key, "no forward call of the model was recorded in your code");
    } else if (key == "optimizer.fused" || key == "optimizer.foreach") {
      std::string name = key.substr(10);
      if (hf) {
        if (name == "fused" && truthy(value))
          keywords_at(plan, fix, *hf, "training_args", "optim", "\"adamw_torch_fused\"");
        else
          none(key, "TrainingArguments has no knob for it");
      } else if (const auto* s = ev.site("optimizer"))
        keywords_at(plan, fix, *s, "optimizer", name, py_bool(value));
      else
        none(key, "no line of your code built the optimizer (no site recorded)");
    } else if (key == "threads") {
      if (script.empty()) {
        none(key, "the command names no .py script to put torch.set_num_threads in");
        continue;
      }
      PatchEdit e;
      e.fix = fix;
      e.op = "threads";
      e.file = script;
      e.sha1 = recorded_sha1(ev, script);
      e.value = value;
      plan.edits.push_back(std::move(e));
    } else if (key == "zero_grad.set_to_none") {
      if (!truthy(value)) {  // the edit writes set_to_none=True on every call
        none(key, "the patch writes set_to_none=True only; false is measured by --set, not written");
        continue;
      }
      const auto* s = ev.site("forward");
      if (!s) s = ev.site("optimizer");
      if (!s) {
        none(key, "no line of the training loop was recorded");
        continue;
      }
      PatchEdit e = at(fix, "zero_grad", *s);
      e.line = 0;
      plan.edits.push_back(std::move(e));
    } else if (key == "autograd.detect_anomaly") {
      if (pl && pl->knob_on("detect_anomaly"))
        keywords_at(plan, fix, *pl, "trainer", "detect_anomaly", "False");
      else if (const auto* s = ev.site("anomaly"))
        plan.edits.push_back(at(fix, "anomaly", *s));
      else
        none(key, "no line of your code turned anomaly detection on (no site recorded)");
    } else if (key == "malloc.mmap") {
      none(key, "an environment setting, not a line of code: run the job with MALLOC_MMAP_MAX_=0 "
                "MALLOC_TRIM_THRESHOLD_=2147483647");
    } else {
      none(key, "no edit is known for this setting");
    }
  }
}

std::string patch_spec_json(const std::string& root, const std::string& out, const std::vector<PatchEdit>& edits) {
  JsonWriter w(false);
  w.begin_object().field("root", root).field("out", out);
  w.key("edits").begin_array();
  for (const auto& e : edits) {
    w.begin_object().field("fix", e.fix).field("op", e.op).field("file", e.file).field("line", e.line).field("sha1", e.sha1);
    if (!e.call.empty()) w.field("call", e.call);
    if (e.op == "keywords" && e.caller_line > 0) {
      w.field("func", e.func);
      w.key("caller").begin_object().field("file", e.caller_file).field("line", e.caller_line);
      w.field("sha1", e.caller_sha1).end_object();
    }
    if (!e.keywords.empty()) {
      w.key("keywords").begin_array();
      for (const auto& [k, v] : e.keywords) w.begin_array().value(k).value(v).end_array();
      w.end_array();
    }
    if (!e.with.empty()) w.field("with", e.with);
    if (e.op == "threads") w.field("value", e.value);
    if (e.op == "compile") w.field("mode", e.value);
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

std::string command_script(const std::vector<std::string>& command, const std::string& cwd) {
  for (size_t i = 0; i < command.size(); ++i) {
    const auto& a = command[i];
    if (a.size() > 3 && a.compare(a.size() - 3, 3, ".py") == 0 && a[0] != '-') {
      std::filesystem::path p(a);
      return (p.is_absolute() ? p : std::filesystem::path(cwd) / p).lexically_normal().string();
    }
  }
  return "";
}

}  // namespace ts::experiment
