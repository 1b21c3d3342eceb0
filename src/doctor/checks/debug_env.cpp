// debug-env: switches meant for debugging, left set in the environment training runs in. Each
// slows every step and is documented as a debugging aid by its owner:
// - CUDA_LAUNCH_BLOCKING=1: every CUDA launch waits for its kernel (PyTorch, "CUDA semantics",
//   asynchronous execution: "handy when an error occurs on the GPU");
// - PYTORCH_NO_CUDA_MEMORY_CACHING=1: no caching allocator, a cudaMalloc/cudaFree per tensor
//   (PyTorch, "CUDA semantics", memory management: "useful for debugging");
// - TORCH_DISTRIBUTED_DEBUG=DETAIL: every collective checked for consistency across ranks
//   (torch.distributed docs: "will impact the application performance and thus should only be
//   used when debugging issues");
// - TORCH_COMPILE_DEBUG=1: torch.compile writes its debug artifacts at every compilation;
// - NCCL_DEBUG=TRACE: NCCL traces every call (NCCL's environment variables: TRACE "prints
//   replayable trace information on every call").
// Read from the probe's environment (the one the user trains in) or, with --pid, the job's.
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"

namespace ts::doctor {

namespace {

struct Switch {
  const char* key;
  bool (*on)(const std::string&);
  const char* effect;
  const char* fix;
};

bool is_one(const std::string& v) { return v == "1"; }
bool is_detail(const std::string& v) { return v == "DETAIL" || v == "detail"; }
bool is_trace(const std::string& v) { return v == "TRACE" || v == "trace"; }

const Switch kSwitches[] = {
    {"CUDA_LAUNCH_BLOCKING", is_one, "every CUDA kernel launch waits for the kernel to finish", "unset CUDA_LAUNCH_BLOCKING"},
    {"PYTORCH_NO_CUDA_MEMORY_CACHING", is_one,
     "PyTorch's caching allocator is off: a cudaMalloc and cudaFree for every tensor", "unset PYTORCH_NO_CUDA_MEMORY_CACHING"},
    {"TORCH_DISTRIBUTED_DEBUG", is_detail, "every collective is checked for consistency across the ranks",
     "unset TORCH_DISTRIBUTED_DEBUG (or set it to OFF)"},
    {"TORCH_COMPILE_DEBUG", is_one, "torch.compile writes its debug artifacts at every compilation",
     "unset TORCH_COMPILE_DEBUG"},
    {"NCCL_DEBUG", is_trace, "NCCL traces every call", "unset NCCL_DEBUG (or set it to WARN)"},
};

}  // namespace

Check check_debug_env(const DoctorFacts& f) {
  Check c = make_check("debug-env", "Debugging switches in the environment");
  if (!f.process.readable) {
    c.status = Status::skip;
    c.summary = "the process's environment could not be read" +
                (f.process.read_error.empty() ? std::string() : ": " + f.process.read_error);
    return c;
  }
  std::string set, fixes;
  for (const auto& s : kSwitches) {
    auto it = f.process.env.find(s.key);
    if (it == f.process.env.end() || !s.on(it->second)) continue;
    c.add(s.key, it->second);
    set += fmt::format("{}{}={} ({})", set.empty() ? "" : "; ", s.key, it->second, s.effect);
    fixes += fmt::format("{}{}", fixes.empty() ? "" : "; ", s.fix);
  }
  if (set.empty()) {
    c.status = Status::pass;
    c.summary = "none set (CUDA_LAUNCH_BLOCKING, PYTORCH_NO_CUDA_MEMORY_CACHING, TORCH_DISTRIBUTED_DEBUG=DETAIL, "
                "TORCH_COMPILE_DEBUG, NCCL_DEBUG=TRACE)";
    return c;
  }
  c.status = Status::warn;
  c.summary = "debugging switches slow every step: " + set;
  c.fix = fixes + " before training; they are for debugging (PyTorch's \"CUDA semantics\" and torch.distributed docs).";
  return c;
}

}  // namespace ts::doctor
