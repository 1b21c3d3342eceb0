#include "sample/process_tree.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "sample/procfs.h"

namespace ts::sample {

namespace {

template <class F>
void for_numeric_entries(const std::string& dir, F fn) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    fn(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(d);
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

}  // namespace

std::vector<pid_t> process_tree_by_scan(pid_t root, const std::string& proc_root) {
  std::unordered_multimap<pid_t, pid_t> kids;
  std::string text;
  for_numeric_entries(proc_root, [&](pid_t pid) {
    if (!procfs::read_text(proc_root + "/" + std::to_string(pid) + "/stat", text)) return;
    if (auto s = procfs::parse_pid_stat(text)) kids.emplace(s->ppid, s->pid);
  });
  std::vector<pid_t> out;
  if (!exists(proc_root + "/" + std::to_string(root))) return out;
  out.push_back(root);
  for (size_t i = 0; i < out.size(); ++i) {
    auto [a, b] = kids.equal_range(out[i]);
    std::vector<pid_t> c;
    for (auto it = a; it != b; ++it) c.push_back(it->second);
    std::sort(c.begin(), c.end());
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

std::vector<pid_t> process_tree(pid_t root, const std::string& proc_root) {
  const std::string rootdir = proc_root + "/" + std::to_string(root);
  if (!exists(rootdir)) return {};
  if (!exists(rootdir + "/task/" + std::to_string(root) + "/children"))
    return process_tree_by_scan(root, proc_root);
  std::vector<pid_t> out{root};
  std::string text;
  for (size_t i = 0; i < out.size() && out.size() < 100000; ++i) {
    const std::string base = proc_root + "/" + std::to_string(out[i]) + "/task";
    std::vector<pid_t> c;
    // Any thread may have forked: read every task's children.
    for_numeric_entries(base, [&](pid_t tid) {
      if (!procfs::read_text(base + "/" + std::to_string(tid) + "/children", text)) return;
      auto k = procfs::parse_children(text);
      c.insert(c.end(), k.begin(), k.end());
    });
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

}  // namespace ts::sample
