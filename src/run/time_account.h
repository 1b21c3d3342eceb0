#pragma once
// The whole run accounted (docs/SCHEMA.md run.time_account): from the training process's `phases`
// record (agent phases.py) and its step totals, every second from launch to exit in exactly one
// bucket: before the first step, compilation, training steps, evaluation, checkpoints, data wait,
// other. The agent's clock and ours are both CLOCK_MONOTONIC.
#include <optional>
#include <string>
#include <sys/types.h>

#include "diagnose/evidence.h"
#include "run/agent_records.h"

namespace ts::run {

// launch_mono_s: when the command started (steady_clock seconds); wall_s: how long it ran.
// Empty when the process sent no phases record (an older agent, no torch, no step).
std::optional<diagnose::TimeAccount> time_account(const Records& r, pid_t main_pid, double launch_mono_s,
                                                  double wall_s, double steady_step_ms);

// The start-up profile (agent startup.py's `startup` record): the import share into the account,
// the top user lines into ev.sites (role "startup", their share of before_first_step_s as host_ms,
// the source line as the agent read it). Needs ev.time_account; nothing without the record.
void add_startup_profile(const Records& r, pid_t main_pid, const std::string& cwd, diagnose::AgentEvidence& ev);

}  // namespace ts::run
