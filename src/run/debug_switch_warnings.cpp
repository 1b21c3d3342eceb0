#include "run/debug_switch_warnings.h"

#include <fmt/format.h>

namespace ts::run {

std::vector<std::string> debug_switch_warnings(const std::vector<sample::DebugSwitch>& set,
                                               const diagnose::AgentEvidence& job) {
  const bool gpu = job.param_device.rfind("cuda", 0) == 0;
  const bool ranks = job.world_size > 1;
  const bool compiled = job.compiled || (job.time_account && job.time_account->compile_frames > 0);
  std::vector<std::string> out;
  for (const auto& s : set) {
    bool applies = false;
    switch (s.scope) {
      case sample::SwitchScope::Cuda: applies = gpu; break;
      case sample::SwitchScope::Distributed: applies = ranks; break;
      case sample::SwitchScope::Compile: applies = compiled; break;
      case sample::SwitchScope::Nccl: applies = ranks && gpu; break;
    }
    if (applies)
      out.push_back(fmt::format("{}={} is set: {}. It is a debugging switch and this job paid for it: {} before "
                                "training",
                                s.key, s.value, s.effect, s.fix));
  }
  return out;
}

}  // namespace ts::run
