#include "sample/shm_fault_cost.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace ts::sample {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ShmFaultCost measure_shm_fault_cost(int mib, int repeats) {
  ShmFaultCost out;
  if (mib <= 0 || repeats <= 0) return out;
  const size_t n = static_cast<size_t>(mib) << 20;
  std::vector<char> src(n, 7);  // written once: its own pages are faulted in before timing
  std::vector<double> fresh, warm;
  for (int i = 0; i < repeats; ++i) {
    // The system call, not glibc's memfd_create wrapper (glibc 2.27): the portable binary's
    // floor is glibc 2.25 (README); the kernel has had it since 3.17.
    int fd = static_cast<int>(syscall(SYS_memfd_create, "trainscope-shm-cost", MFD_CLOEXEC));
    if (fd < 0) return out;
    if (ftruncate(fd, static_cast<off_t>(n)) != 0) {
      close(fd);
      return out;
    }
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return out;
    const double t0 = now_ms();
    std::memcpy(p, src.data(), n);  // fresh: every page faulted in and zeroed, then written
    const double t1 = now_ms();
    std::memcpy(p, src.data() + 1, n - 1);  // warm: the copy alone (offset so it is a real copy)
    const double t2 = now_ms();
    munmap(p, n);
    fresh.push_back((t1 - t0) / mib);
    warm.push_back((t2 - t1) / mib);
  }
  // The fastest of the repeats: a cost of this host's memory system, not of whatever else ran at
  // the time (the model counts other work on the cores separately).
  out.fresh_ms_per_mib = *std::min_element(fresh.begin(), fresh.end());
  out.warm_ms_per_mib = *std::min_element(warm.begin(), warm.end());
  out.ms_per_mib = std::max(0.0, out.fresh_ms_per_mib - out.warm_ms_per_mib);
  return out;
}

}  // namespace ts::sample
