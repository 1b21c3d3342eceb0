#pragma once
// `trainscope run`'s warnings for debugging switches (sample/debug_switches.h) left set in the
// environment the job inherited, each only where the job did what it slows: the CUDA ones when
// the model was on a GPU, TORCH_DISTRIBUTED_DEBUG and NCCL_DEBUG in a job of several ranks (NCCL's
// on a GPU), TORCH_COMPILE_DEBUG when torch.compile compiled something.
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "sample/debug_switches.h"

namespace ts::run {

std::vector<std::string> debug_switch_warnings(const std::vector<sample::DebugSwitch>& set,
                                               const diagnose::AgentEvidence& job);

}  // namespace ts::run
