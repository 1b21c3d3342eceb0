#include "util/memory.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace ts {
namespace {

uint64_t read_number(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return 0;
  return std::strtoull(s.c_str(), nullptr, 10);
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t avail = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = kb * 1024;
    std::fclose(f);
  }
  // cgroup v2: this process's group, if it has a limit (/proc/self/cgroup "0::/path").
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    const std::string dir = "/sys/fs/cgroup" + line.substr(3);
    const uint64_t max = read_number((dir + "/memory.max").c_str());
    const uint64_t cur = read_number((dir + "/memory.current").c_str());
    if (max > 0) {
      const uint64_t left = max > cur ? max - cur : 0;
      if (avail == 0 || left < avail) avail = left;
    }
  }
  return avail;
}

}  // namespace ts
