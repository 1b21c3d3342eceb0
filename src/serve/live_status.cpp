#include "serve/live_status.h"

#include <dirent.h>
#include <algorithm>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ts::serve {

std::vector<LiveStatus> read_live_statuses(const std::string& dir, double now_unix,
                                           std::vector<std::string>* skipped) {
  std::vector<LiveStatus> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0 || name[0] == '.') continue;
    std::string path = dir + "/" + name;
    std::ifstream f(path);
    if (!f) continue;  // removed between readdir and open: the run ended
    std::stringstream ss;
    ss << f.rdbuf();
    LiveStatus s;
    s.file = path;
    std::string error;
    if (!parse_live_status(ss.str(), s, error)) {
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
