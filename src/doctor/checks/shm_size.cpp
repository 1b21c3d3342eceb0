// shm-size: DataLoader workers hand batches to the main process through /dev/shm. Docker's
// default is 64 MB: workers die with "DataLoader worker (pid N) is killed by signal: Bus error".
#include <fmt/format.h>

#include "doctor/checks/check_util.h"
#include "doctor/checks/checks.h"
#include "util/format.h"

namespace ts::doctor {

Check check_shm_size(const DoctorFacts& f) {
  Check c = make_check("shm-size", "/dev/shm for DataLoader workers");
  const auto& h = f.host;
  if (h.shm_total_bytes < 0) {
    c.status = Status::warn;
    c.summary = "/dev/shm is not mounted: DataLoader workers (num_workers > 0) cannot share batches";
    c.fix = "Mount a tmpfs on /dev/shm (docker run --shm-size=8g, or --ipc=host).";
    return c;
  }
  const double used = static_cast<double>(h.shm_total_bytes - h.shm_free_bytes);
  const double used_ratio = h.shm_total_bytes > 0 ? used / static_cast<double>(h.shm_total_bytes) : 1;
  c.add("size", human_bytes(static_cast<double>(h.shm_total_bytes)));
  c.add("used", fmt::format("{} ({:.0f}%)", human_bytes(used), used_ratio * 100));
  int workers = 0;
  if (f.inspecting_pid) {
    // DataLoader workers are child processes of the training process (named pt_data_worker on 2.x).
    for (const auto& t : f.process.tree)
      if (t.ppid == f.process.pid) ++workers;
    c.add("child processes of the job", std::to_string(workers));
  }
  constexpr int64_t MiB = 1 << 20;
  if (used_ratio > 0.9 && (workers > 0 || !f.inspecting_pid)) {
    c.status = Status::fail;
    c.summary = fmt::format("/dev/shm is {:.0f}% full: the next DataLoader batch may kill a worker with SIGBUS",
                            used_ratio * 100);
    c.fix = "Free /dev/shm (stale files of crashed jobs) or enlarge it: docker run --shm-size=16g / --ipc=host.";
    return c;
  }
  if (h.shm_total_bytes <= 512 * MiB) {
    c.status = Status::warn;
    c.summary = fmt::format("/dev/shm is only {}{}: DataLoader workers die with 'Bus error' once batches in "
                            "flight exceed it", human_bytes(static_cast<double>(h.shm_total_bytes)),
                            h.shm_total_bytes <= 64 * MiB ? " (Docker's default)" : "");
    c.fix = "Start the container with --shm-size=8g (or more) or --ipc=host; in Kubernetes mount an emptyDir "
            "with medium: Memory on /dev/shm.";
    return c;
  }
  c.status = Status::pass;
  c.summary = fmt::format("/dev/shm {} ({:.0f}% used)", human_bytes(static_cast<double>(h.shm_total_bytes)),
                          used_ratio * 100);
  return c;
}

}  // namespace ts::doctor
