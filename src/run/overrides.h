#pragma once
// `trainscope run --set KEY=VALUE`: the settings the agent can apply to an unchanged script at run
// time (agent/trainscope_agent/overrides.py does it), their validation, and what the agent said
// about each one (applied, or why not).
#include <string>
#include <utility>
#include <vector>

#include "run/agent_records.h"

namespace ts::run {

struct OverrideKey {
  const char* key;
  const char* values;  // what VALUE may be, for --help and errors
  const char* what;    // what the agent does
};
const std::vector<OverrideKey>& override_keys();

using Override = std::pair<std::string, std::string>;  // key, value

// "" when KEY=VALUE is a known key with a valid value, else the problem in one line
// ("unknown key 'x' (known: ...)", "dataloader.num_workers: expected an integer >= 0, got 'a'").
std::string check_override(const std::string& key_value);
// Splits a checked KEY=VALUE (throws UserError when check_override finds a problem).
Override parse_override(const std::string& key_value);
// The TRAINSCOPE_SET value: one key=value per line.
std::string overrides_env(const std::vector<Override>& overrides);

struct OverrideOutcome {
  std::string key, value;
  bool applied = false;
  std::string reason;  // what was changed, or why nothing was
};
// One outcome per requested override, from the agent's `override` records; a key the agent never
// answered (no Python, no torch, agent off) says so.
std::vector<OverrideOutcome> override_outcomes(const std::vector<Override>& requested, const Records& records,
                                               const std::string& why_unanswered);

}  // namespace ts::run
