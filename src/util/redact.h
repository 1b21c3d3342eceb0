#pragma once
// Secrets out of the command lines we write or print (report.json/txt/html, the run store, live
// files): launch scripts pass tokens as flags (--hf_token X, --api-key=X), as KEY=value arguments
// (WANDB_API_KEY=...) and inside URLs (https://user:pass@host, ?token=...). The value is replaced
// by "***"; the flag or name stays so the command still reads as what it was.
#include <string>
#include <vector>

namespace ts {

inline constexpr const char* kRedacted = "***";

// Each argument redacted; a secret-named flag followed by a separate value has that value redacted.
std::vector<std::string> redact_argv(const std::vector<std::string>& argv);

// A command already joined by spaces (as the store keeps it): split on spaces, redact_argv, re-join.
std::string redact_command_line(const std::string& line);

// True when a flag name (any case, '-' or '_' separated) names a secret: it contains secret,
// password, passwd, credential, apikey or signature, is sig (presigned URLs), or ends in token or key.
bool is_secret_name(const std::string& name);
// True when a variable name (KEY=value arguments) names a secret: it contains TOKEN (not
// TOKENIZER), KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL.
bool is_secret_env_name(const std::string& name);

}  // namespace ts
