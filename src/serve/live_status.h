#pragma once
// Reading the live-status files running `trainscope run` jobs hand to `trainscope serve` on the
// same host (the schema, its writer and its parser: sample/live_status.h). Serve reads every
// *.json in the live directory at each scrape; files whose writer is gone or that stopped
// updating are ignored, so a crashed run never leaves a ghost in the metrics.
#include <string>
#include <vector>

#include "sample/live_status.h"

namespace ts::serve {

using sample::LiveStatus;
using sample::parse_live_status;

// Every current status in `dir`: parsed, writer alive (kill(pid, 0)), updated within its
// stale_after_s of `now_unix`. Unreadable or malformed files are skipped (listed in `skipped`).
// A `dir` that is not private to us (a symlink, another owner, group/other access) is not read
// at all (its problem is the one entry of `skipped`); files are opened with O_NOFOLLOW.
std::vector<LiveStatus> read_live_statuses(const std::string& dir, double now_unix,
                                           std::vector<std::string>* skipped = nullptr);

}  // namespace ts::serve
