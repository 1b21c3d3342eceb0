// The sampler follows a real PyTorch job: Debian's python3 with torch runs a DataLoader with
// two worker processes; the sampler, rooted at the python PID, must see the main process and
// both workers with their CPU use, threads and names, and a busy process tree.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "sample/sampler.h"
#include "support/torch_python.h"

using namespace std::chrono_literals;

namespace {
const char* kScript = R"(
import time, torch
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):   # CPU-heavy samples: the workers are busy
    def __len__(self): return 10**7
    def __getitem__(self, i):
        s = 0
        for k in range(3000): s += k
        return torch.tensor([s])
t0 = time.time()
for b in DataLoader(Slow(), batch_size=8, num_workers=2):
    if time.time() - t0 > 6: break
)";
}  // namespace

TEST(TorchTree, FollowsDataLoaderWorkers) {
  if (!ts::test::system_python_has_torch())
    GTEST_FAIL() << "/usr/bin/python3 has no torch";
  pid_t py = fork();
  if (py == 0) {
    // argv[0] is the full path: Python finds its prefix from argv[0] through PATH, and a PATH that
    // starts with another Python's bin/ (pyenv exec, which runs ctest here) would give it that one's.
    execl("/usr/bin/python3", "/usr/bin/python3", "-c", kScript, static_cast<char*>(nullptr));
    _exit(127);
  }
  ts::sample::SamplerConfig c;
  c.interval = 100ms;
  c.slow_interval = 200ms;
  c.root_pid = py;
  c.use_nvml = false;
  ts::sample::Sampler s(c);
  s.start();
  // Wait (up to 60 s on a loaded machine) until the two workers exist and have been read twice.
  size_t seen = 0;
  for (int i = 0; i < 600 && seen < 3; ++i) {
    std::this_thread::sleep_for(100ms);
    auto t = s.last_tick();
    size_t busy_workers = 0;
    for (const auto& p : t.processes)
      if (p.pid != py && p.cpu_pct > 0) ++busy_workers;
    seen = t.processes.size() >= 3 && busy_workers >= 2 ? 3 : 0;
  }
  ts::sample::Tick t = s.last_tick();
  s.stop();
  kill(py, SIGKILL);
  waitpid(py, nullptr, 0);
  ASSERT_GE(t.processes.size(), 3u) << "never saw the DataLoader workers";
  EXPECT_EQ(t.processes[0].pid, py);
  EXPECT_EQ(t.processes[0].comm, "python3");
  EXPECT_GT(t.processes[0].threads, 1);  // torch's intra-op / pin threads
  int workers = 0;
  for (size_t i = 1; i < t.processes.size(); ++i) {
    if (t.processes[i].ppid != py) continue;
    ++workers;
    EXPECT_GT(t.processes[i].cpu_pct, 0) << t.processes[i].pid;
    EXPECT_GT(t.processes[i].rss_bytes, 10e6);  // a worker holds torch in memory
  }
  EXPECT_EQ(workers, 2);
  ts::sample::Summary sum = s.summary();
  EXPECT_GE(sum.process_count, 3);
  EXPECT_GT(sum.process_tree_cpu_max_pct, 0);
  EXPECT_GE(sum.threads_total, 3);
}
