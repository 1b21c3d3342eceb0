#include "run/overrides.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "util/error.h"

namespace ts::run {
namespace {

bool is_bool(const std::string& v) {
  return v == "true" || v == "false" || v == "1" || v == "0" || v == "yes" || v == "no" || v == "on" || v == "off";
}
bool truthy(const std::string& v) { return v == "true" || v == "1" || v == "yes" || v == "on"; }
bool is_int(const std::string& v, long lo, long hi) {
  if (v.empty() || v.size() > 6) return false;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  return *end == '\0' && n >= lo && n <= hi;
}

// Each key's value check; the ranges are PyTorch's own (prefetch_factor >= 1, threads >= 1) with a
// ceiling that catches typos (1024 workers is never meant).
bool valid_value(const std::string& key, const std::string& v) {
  if (key == "dataloader.num_workers") return is_int(v, 0, 1024);
  if (key == "dataloader.prefetch_factor") return is_int(v, 1, 1024);
  if (key == "threads") return is_int(v, 1, 4096);
  if (key == "autocast") return v == "bf16" || v == "bfloat16";
  if (key == "compile") return is_bool(v) || v == "default" || v == "reduce-overhead" || v == "max-autotune";
  if (key == "autograd.detect_anomaly") return is_bool(v) && !truthy(v);  // it only turns it off
  if (key == "malloc.mmap") return is_bool(v) && !truthy(v);              // mapping is glibc's default
  return is_bool(v);
}

}  // namespace

const std::vector<OverrideKey>& override_keys() {
  static const std::vector<OverrideKey> k = {
      {"dataloader.num_workers", "N >= 0", "DataLoader(num_workers=N)"},
      {"dataloader.pin_memory", "true|false", "DataLoader(pin_memory=...) (CUDA only)"},
      {"dataloader.prefetch_factor", "N >= 1", "DataLoader(prefetch_factor=N) (needs workers)"},
      {"dataloader.persistent_workers", "true|false", "DataLoader(persistent_workers=...) (needs workers)"},
      {"copy.non_blocking", "true|false", "host-to-device .to()/.cuda() with non_blocking=True (CUDA only)"},
      {"autocast", "bf16", "the model's forward under torch.autocast(dtype=torch.bfloat16)"},
      {"compile", "true|default|reduce-overhead|max-autotune", "torch.compile the model (PyTorch >= 2.0)"},
      {"optimizer.fused", "true|false", "torch.optim optimizers with fused=True (CUDA only)"},
      {"optimizer.foreach", "true|false", "torch.optim optimizers with foreach=True"},
      {"threads", "N >= 1", "torch.set_num_threads(N), kept over the script's own calls"},
      {"zero_grad.set_to_none", "true|false", "zero_grad(set_to_none=True)"},
      {"autograd.detect_anomaly", "false", "anomaly detection stays off whatever the script calls (a debugging mode)"},
      {"malloc.mmap", "false", "glibc's malloc keeps large blocks in its heap, not mapped anew at each allocation "
                               "(mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD 2 GiB: MALLOC_MMAP_MAX_=0)"},
  };
  return k;
}

std::string check_override(const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) return fmt::format("'{}': expected KEY=VALUE", kv);
  std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  const auto& keys = override_keys();
  auto it = std::find_if(keys.begin(), keys.end(), [&](const OverrideKey& k) { return key == k.key; });
  if (it == keys.end()) {
    std::string known;
    for (const auto& k : keys) known += (known.empty() ? "" : ", ") + std::string(k.key);
    return fmt::format("unknown key '{}' (known: {})", key, known);
  }
  if (!valid_value(key, value)) return fmt::format("{}: expected {}, got '{}'", key, it->values, value);
  return "";
}

Override parse_override(const std::string& kv) {
  if (auto problem = check_override(kv); !problem.empty()) throw UserError("--set " + problem, 2);
  auto eq = kv.find('=');
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

std::string overrides_env(const std::vector<Override>& overrides) {
  std::string s;
  for (const auto& [k, v] : overrides) s += k + "=" + v + "\n";
  return s;
}

std::vector<OverrideOutcome> override_outcomes(const std::vector<Override>& requested, const Records& records,
                                               const std::string& why_unanswered) {
  std::vector<OverrideOutcome> out;
  for (const auto& [key, value] : requested) {
    OverrideOutcome o{key, value, false, why_unanswered};
    // Applied when any process applied it (mp.spawn's parent builds no DataLoader, its ranks do);
    // otherwise the first process's reason.
    bool answered = false;
    for (const auto& t : records.texts) {
      if (t.kind != "override" || t.get("key") != key) continue;
      if (t.get_bool("applied")) {
        o.applied = true;
        o.reason = t.get("reason");
        break;
      }
      if (!answered) o.reason = t.get("reason");
      answered = true;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace ts::run
