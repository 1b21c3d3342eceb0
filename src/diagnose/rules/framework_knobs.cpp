// A fix that is a framework's setting, written where the user sets it: at their TrainingArguments(...) /
// Trainer(...) line, or, when an argument parser builds those from outside the code (HfArgumentParser
// in every Hugging Face example script, LightningCLI), as the command-line flag or the key of the file
// the parser reads (CodeSite::parsed_from). "set dataloader_num_workers=4 here" at
// `parser.parse_args_into_dataclasses()` names a line the user cannot put it on.
#include <fmt/format.h>

#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

namespace {

bool lightning(const CodeSite& cfg) { return cfg.detail.rfind("lightning", 0) == 0; }

std::string unquoted(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) return v.substr(1, v.size() - 2);
  return v;
}

// A Python literal as the parser reads it: HfArgumentParser takes "True" for a bool field (its
// string_to_bool), LightningCLI's jsonargparse and YAML take "true"; JSON needs true.
std::string as_read(const std::string& v, bool lower_bools) {
  if (lower_bools && (v == "True" || v == "False")) return v == "True" ? "true" : "false";
  return unquoted(v);
}

std::string flag(const CodeSite& cfg, const std::pair<std::string, std::string>& kv) {
  const bool pl = lightning(cfg);
  return fmt::format("--{}{} {}", pl ? "trainer." : "", kv.first, kv.second.empty() ? "N" : as_read(kv.second, pl));
}

std::string file_key(const CodeSite& cfg, const std::pair<std::string, std::string>& kv) {
  std::string v = kv.second.empty() ? "N" : as_read(kv.second, true);
  if (cfg.parsed_from != "json") return kv.first + ": " + v;
  if (unquoted(kv.second) != kv.second) v = "\"" + v + "\"";  // a string stays one
  return "\"" + kv.first + "\": " + v;
}

std::string joined(const CodeSite& cfg, const Knobs& set, const char* sep,
                   std::string (*one)(const CodeSite&, const std::pair<std::string, std::string>&)) {
  std::string out;
  for (const auto& kv : set) out += (out.empty() ? "" : sep) + one(cfg, kv);
  return out;
}

std::string named(const CodeSite&, const std::pair<std::string, std::string>& kv) {
  return kv.second.empty() ? kv.first : kv.first + "=" + kv.second;
}

std::string assignment(const CodeSite&, const std::pair<std::string, std::string>& kv) {
  return kv.first + "=" + (kv.second.empty() ? "N" : kv.second);
}

const char* parser_name(const CodeSite& cfg) {
  return lightning(cfg) ? "LightningCLI builds the Trainer" : "HfArgumentParser builds TrainingArguments";
}

}  // namespace

std::string knob_note(const CodeSite& cfg, const KnobFix& fix) {
  const std::string why = fix.why.empty() ? "" : ": " + fix.why;
  if (fix.set.empty()) return fix.why + " here";
  if (cfg.parsed_from == "argv")
    return fmt::format("pass {} on the command line ({} from it here){}", joined(cfg, fix.set, " ", flag),
                       parser_name(cfg), why);
  if (cfg.parsed_from == "json" || cfg.parsed_from == "yaml")
    return fmt::format("set {} in the {} file this line reads{}", joined(cfg, fix.set, ", ", file_key),
                       cfg.parsed_from == "json" ? "JSON" : "YAML", why);
  return fmt::format("set {} here{}", joined(cfg, fix.set, ", ", named), why);
}

std::string knob_code(const Evidence& ev, const CodeSite& cfg, const Knobs& set) {
  if (cfg.parsed_from == "argv") return job_command(ev, "python train.py ...") + " " + joined(cfg, set, " ", flag);
  if (cfg.parsed_from == "json") return "{..., " + joined(cfg, set, ", ", file_key) + "}";
  if (cfg.parsed_from == "yaml") return joined(cfg, set, "\n", file_key);
  return fmt::format("{} = {}(..., {})", lightning(cfg) ? "trainer" : "args",
                     lightning(cfg) ? "Trainer" : "TrainingArguments", joined(cfg, set, ", ", assignment));
}

}  // namespace ts::diagnose::rules
