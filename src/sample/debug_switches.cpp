// The switches and what each does (sources: PyTorch's "CUDA semantics" page, asynchronous
// execution and memory management; the torch.distributed docs, "Debugging torch.distributed
// applications": TORCH_DISTRIBUTED_DEBUG=DETAIL "will impact the application performance and thus
// should only be used when debugging issues"; NCCL's environment variables, NCCL_DEBUG=TRACE
// "prints replayable trace information on every call"). NCCL_DEBUG=INFO prints at start-up only,
// TORCH_DISTRIBUTED_DEBUG=INFO adds a check at construction: neither slows a step.
#include "sample/debug_switches.h"

#include <cstdlib>

namespace ts::sample {
namespace {

struct Known {
  const char* key;
  const char* on[2];  // values that turn it on
  const char* effect;
  const char* fix;
  SwitchScope scope;
};

const Known kKnown[] = {
    {"CUDA_LAUNCH_BLOCKING", {"1", nullptr}, "every CUDA kernel launch waits for the kernel to finish",
     "unset CUDA_LAUNCH_BLOCKING", SwitchScope::Cuda},
    {"PYTORCH_NO_CUDA_MEMORY_CACHING", {"1", nullptr},
     "PyTorch's caching allocator is off: a cudaMalloc and cudaFree for every tensor",
     "unset PYTORCH_NO_CUDA_MEMORY_CACHING", SwitchScope::Cuda},
    {"TORCH_DISTRIBUTED_DEBUG", {"DETAIL", "detail"}, "every collective is checked for consistency across the ranks",
     "unset TORCH_DISTRIBUTED_DEBUG (or set it to OFF)", SwitchScope::Distributed},
    {"TORCH_COMPILE_DEBUG", {"1", nullptr}, "torch.compile writes its debug artifacts at every compilation",
     "unset TORCH_COMPILE_DEBUG", SwitchScope::Compile},
    {"NCCL_DEBUG", {"TRACE", "trace"}, "NCCL traces every call", "unset NCCL_DEBUG (or set it to WARN)",
     SwitchScope::Nccl},
};

}  // namespace

const std::vector<std::string>& debug_switch_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& s : kKnown) k.emplace_back(s.key);
    return k;
  }();
  return keys;
}

std::string debug_switches_watched() {
  std::string out;
  for (const auto& s : kKnown) out += (out.empty() ? "" : ", ") + std::string(s.key) + "=" + s.on[0];
  return out;
}

std::vector<DebugSwitch> debug_switches_on(const std::map<std::string, std::string>& env) {
  std::vector<DebugSwitch> out;
  for (const auto& s : kKnown) {
    auto it = env.find(s.key);
    if (it == env.end()) continue;
    bool on = false;
    for (const char* v : s.on) on = on || (v && it->second == v);
    if (on) out.push_back({s.key, it->second, s.effect, s.fix, s.scope});
  }
  return out;
}

std::vector<DebugSwitch> debug_switches_in_environ() {
  std::map<std::string, std::string> env;
  for (const auto& k : debug_switch_keys())
    if (const char* v = std::getenv(k.c_str())) env[k] = v;
  return debug_switches_on(env);
}

}  // namespace ts::sample
