#include "serve/live_status.h"

#include <dirent.h>
#include <fcntl.h>
#include <algorithm>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include "util/private_dir.h"

namespace ts::serve {

std::vector<LiveStatus> read_live_statuses(const std::string& dir, double now_unix,
                                           std::vector<std::string>* skipped) {
  std::vector<LiveStatus> out;
  // Only a folder of ours that no one else can write holds statuses we believe (the writer's rule).
  struct stat dst;
  if (::lstat(dir.c_str(), &dst) != 0) return out;  // no run has made it yet
  if (std::string problem = private_dir_problem(dir); !problem.empty()) {
    if (skipped) skipped->push_back(problem + "; live job metrics off");
    return out;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0 || name[0] == '.') continue;
    std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;  // removed between readdir and open (the run ended), or a symlink
    struct stat st;
    std::string text;
    // Our own regular files only: one planted while the folder was open to others is not ours.
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size < (1 << 20)) {
      text.resize(static_cast<size_t>(st.st_size));
      ssize_t n = ::read(fd, text.data(), text.size());
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    ::close(fd);
    LiveStatus s;
    s.file = path;
    std::string error;
    if (!parse_live_status(text, s, error)) {
      if (skipped) skipped->push_back(path + ": " + error);
      continue;
    }
    if (kill(s.pid, 0) != 0 && errno == ESRCH) continue;           // writer gone
    if (now_unix - s.updated_unix > s.stale_after_s) continue;     // writer stuck
    out.push_back(std::move(s));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const LiveStatus& a, const LiveStatus& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.rank < b.rank;
  });
  return out;
}

}  // namespace ts::serve
