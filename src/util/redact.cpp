#include "util/redact.h"

#include <cctype>
#include <string>

namespace ts {

namespace {

// Lower case with '-' and '_' dropped: --HF_Token, --hf-token and hf_token all read "hftoken".
std::string squash(const std::string& name) {
  std::string s;
  for (char c : name)
    if (c != '-' && c != '_') s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_env_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// scheme://user:password@host -> scheme://user:***@host; scheme://token@host -> scheme://***@host;
// ?token=...&x=1 -> ?token=***&x=1. Applied to every URL inside `s`.
std::string redact_urls(std::string s) {
  size_t from = 0;
  while ((from = s.find("://", from)) != std::string::npos) {
    size_t start = from + 3;
    size_t end = s.find_first_of(" \t\"'", start);
    if (end == std::string::npos) end = s.size();
    size_t auth_end = s.find_first_of("/?#", start);
    if (auth_end == std::string::npos || auth_end > end) auth_end = end;
    size_t at = s.rfind('@', auth_end);
    if (at != std::string::npos && at >= start && at < auth_end) {
      size_t colon = s.find(':', start);
      size_t secret_from = (colon != std::string::npos && colon < at) ? colon + 1 : start;
      s.replace(secret_from, at - secret_from, kRedacted);
      end = end - (at - secret_from) + std::string(kRedacted).size();
    }
    // Query parameters with secret names.
    size_t q = s.find('?', start);
    while (q != std::string::npos && q < end) {
      size_t eq = s.find('=', q + 1);
      size_t amp = s.find_first_of("&#", q + 1);
      if (amp == std::string::npos || amp > end) amp = end;
      if (eq != std::string::npos && eq < amp && is_secret_name(s.substr(q + 1, eq - q - 1)) && amp > eq + 1) {
        s.replace(eq + 1, amp - eq - 1, kRedacted);
        end = end - (amp - eq - 1) + std::string(kRedacted).size();
        amp = eq + 1 + std::string(kRedacted).size();
      }
      q = amp < end && s[amp] == '&' ? amp : std::string::npos;
    }
    from = end;
  }
  return s;
}

}  // namespace

bool is_secret_name(const std::string& name) {
  std::string n = squash(name);
  auto ends = [&n](const char* w) {
    size_t k = std::char_traits<char>::length(w);
    return n.size() >= k && n.compare(n.size() - k, k, w) == 0;
  };
  for (const char* word : {"secret", "password", "passwd", "credential", "apikey", "signature"})
    if (n.find(word) != std::string::npos) return true;
  if (n == "sig") return true;  // Azure SAS URLs' signature parameter
  // "token" and "key" only as the last word: --hf_token, --api-key, --access_key, but not
  // --max_tokens, --tokenizer_name or --key_dim, whose values are no secret.
  return ends("token") || ends("key");
}

bool is_secret_env_name(const std::string& name) {
  // Variables: TOKEN, KEY, SECRET or PASSWORD anywhere in the name (WANDB_API_KEY, HF_TOKEN,
  // AWS_SECRET_ACCESS_KEY), except the tokenizer's settings (TOKENIZERS_PARALLELISM).
  std::string n = squash(name);
  for (size_t p; (p = n.find("tokenizer")) != std::string::npos;) n.erase(p, 9);
  for (const char* word : {"token", "key", "secret", "password", "passwd", "credential"})
    if (n.find(word) != std::string::npos) return true;
  return false;
}

std::vector<std::string> redact_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool next_is_secret = false;
  for (const std::string& a : argv) {
    if (next_is_secret) {
      next_is_secret = false;
      if (a.empty() || a[0] != '-') {
        out.emplace_back(kRedacted);
        continue;
      }
    }
    if (a.size() > 1 && a[0] == '-') {
      size_t eq = a.find('=');
      std::string name = a.substr(0, eq);
      size_t dashes = name.find_first_not_of('-');
      if (dashes != std::string::npos && is_secret_name(name.substr(dashes))) {
        if (eq == std::string::npos) {
          next_is_secret = true;  // --token VALUE
          out.push_back(a);
        } else {
          out.push_back(name + "=" + kRedacted);  // --token=VALUE
        }
        continue;
      }
    } else if (size_t eq = a.find('='); eq != std::string::npos && eq > 0 && is_env_name(a.substr(0, eq)) &&
                                          is_secret_env_name(a.substr(0, eq))) {
      out.push_back(a.substr(0, eq + 1) + kRedacted);  // WANDB_API_KEY=... (env-style)
      continue;
    }
    out.push_back(redact_urls(a));
  }
  return out;
}

std::string redact_command_line(const std::string& line) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= line.size()) {
    size_t sp = line.find(' ', i);
    if (sp == std::string::npos) sp = line.size();
    parts.push_back(line.substr(i, sp - i));
    i = sp + 1;
  }
  std::string out;
  for (const auto& p : redact_argv(parts)) out += (out.empty() ? "" : " ") + p;
  return out;
}

}  // namespace ts
