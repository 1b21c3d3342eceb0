#pragma once
// The agent's `site` and `config` records (agent/trainscope_agent/sites.py, frameworks.py) ->
// AgentEvidence::sites: the training process's last running totals per line, per step.
#include "diagnose/evidence.h"
#include "run/agent_records.h"

#include <optional>
#include <string>
#include <vector>

namespace ts::run {

// Fills ev.sites from the main process's records (a role the main process never reported is
// taken from the other processes: a DataLoader built in a rank that is not rank 0). `cwd` is the
// main process's working directory ("" unknown): shown paths are relative to it when inside it.
void summarise_sites(const Records& r, pid_t main_pid, const std::string& cwd, diagnose::AgentEvidence& ev);

// The user's line a failed job's traceback came from (util failure_frame) as a site of role
// "raise", its path shown relative to `cwd`; nullopt without one.
std::optional<diagnose::CodeSite> failure_site(const std::vector<std::string>& stderr_tail, const std::string& cwd);

// "train.py" for /work/proj/train.py under /work/proj; the path itself otherwise.
std::string shown_path(const std::string& file, const std::string& cwd);

}  // namespace ts::run
