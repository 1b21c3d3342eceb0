#include "run/code_sites.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "util/failure_line.h"

namespace ts::run {

std::optional<diagnose::CodeSite> failure_site(const std::vector<std::string>& stderr_tail, const std::string& cwd) {
  const auto frame = failure_frame(stderr_tail);
  if (!frame) return std::nullopt;
  diagnose::CodeSite s;
  s.role = "raise";
  s.file = frame->file[0] == '/' || cwd.empty() ? frame->file : (std::filesystem::path(cwd) / frame->file).string();
  s.path = shown_path(s.file, cwd);
  s.line = frame->line;
  s.function = frame->function;
  s.code = frame->code;
  return s;
}

std::string shown_path(const std::string& file, const std::string& cwd) {
  if (cwd.empty() || file.size() <= cwd.size() + 1) return file;
  std::string root = cwd.back() == '/' ? cwd : cwd + "/";
  if (file.compare(0, root.size(), root) == 0) return file.substr(root.size());
  return file;
}

namespace {

using Key = std::tuple<pid_t, std::string, std::string, int64_t>;  // pid, role, file, line

diagnose::CodeSite from_site(const TextRecord& t, const std::string& cwd) {
  diagnose::CodeSite s;
  s.role = t.get("role");
  s.file = t.get("file");
  s.path = shown_path(s.file, cwd);
  s.line = t.get_int("line", 0);
  s.function = t.get("func");
  s.code = t.get("text");
  s.detail = t.get("detail");
  s.sha1 = t.get("sha1");
  s.guard_line = t.get_int("guard_line", 0);
  if (s.guard_line > 0) {
    s.guard = t.get("guard");
    s.guard_doubled = t.get("guard_doubled");
  }
  s.loop_var = t.get("loop_var");
  s.caller_line = t.get_int("caller_line", 0);
  if (s.caller_line > 0) {
    s.caller_file = t.get("caller_file");
    s.caller_path = shown_path(s.caller_file, cwd);
    s.caller_function = t.get("caller_func");
    s.caller_code = t.get("caller_text");
    s.caller_sha1 = t.get("caller_sha1");
  }
  s.calls = t.get_int("count", 0);
  s.host_ms = t.get_double("ns", 0) / 1e6;
  if (s.role == "eval" || s.role == "eval_call" || s.role == "eval_hook") s.loop_ms = t.get_double("loop_ns", -1e6) / 1e6;
  s.bytes = t.get_int("bytes", 0);
  s.pageable = t.get_int("pageable", 0);
  s.blocking = t.get_int("blocking", 0);
  s.starts = t.get_int("starts", 0);
  s.start_ms = t.get_double("start_ns", 0) / 1e6;
  s.restarts = t.get_int("restarts", 0);
  s.restart_ms = t.get_double("restart_ns", 0) / 1e6;
  s.rebuilds = t.get_int("rebuilds", 0);
  s.rebuild_ms = t.get_double("rebuild_ns", 0) / 1e6;
  int64_t steps = t.get_int("steps", 0);
  if (steps > 0 && s.calls > 0) {
    s.calls_per_step = double(s.calls) / double(steps);
    s.ms_per_step = s.host_ms / double(steps);
  }
  return s;
}

// Construction sites first (the order a reader looks for them), then per-call sites by host time.
int role_rank(const std::string& role) {
  static const char* order[] = {"dataloader", "optimizer", "forward", "config", "leak"};
  for (int i = 0; i < 5; ++i)
    if (role == order[i]) return i;
  return 5;
}

}  // namespace

void summarise_sites(const Records& r, pid_t main_pid, const std::string& cwd, diagnose::AgentEvidence& ev) {
  std::map<Key, const TextRecord*> latest;
  struct Config {
    std::vector<std::pair<std::string, std::string>> knobs;
    std::string parsed_from;
  };
  std::map<std::pair<pid_t, std::string>, Config> configs;  // config records by (pid, file:line)
  for (const auto& t : r.texts) {
    if (t.kind == "site") {
      auto& slot = latest[Key{t.pid, t.get("role"), t.get("file"), t.get_int("line", 0)}];
      if (!slot || t.get_int("count", 0) >= slot->get_int("count", 0)) slot = &t;
    } else if (t.kind == "config") {
      auto& c = configs[{t.pid, t.get("site_file") + ":" + t.get("site_line")}];
      c.knobs.clear();
      c.parsed_from = t.get("parsed_from");
      for (const auto& [key, v] : t.kv)
        if (key.rfind("knob_", 0) == 0) c.knobs.emplace_back(key.substr(5), v);
    }
  }
  std::set<std::string> main_roles;
  for (const auto& [key, t] : latest)
    if (std::get<0>(key) == main_pid) main_roles.insert(std::get<1>(key));
  std::set<std::tuple<std::string, std::string, int64_t>> taken;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& [key, t] : latest) {
      const auto& [pid, role, file, line] = key;
      bool mine = pid == main_pid;
      if ((pass == 0) != mine) continue;
      if (!mine && main_roles.count(role)) continue;  // the training process's own line wins
      if (!taken.insert({role, file, line}).second) continue;  // the same line in another rank
      auto s = from_site(*t, cwd);
      if (role == "config") {
        auto it = configs.find({pid, file + ":" + std::to_string(line)});
        if (it != configs.end()) s.knobs = it->second.knobs, s.parsed_from = it->second.parsed_from;
      }
      ev.sites.push_back(std::move(s));
    }
  std::stable_sort(ev.sites.begin(), ev.sites.end(), [](const diagnose::CodeSite& a, const diagnose::CodeSite& b) {
    int ra = role_rank(a.role), rb = role_rank(b.role);
    if (ra != rb) return ra < rb;
    return a.host_ms > b.host_ms;
  });
}

}  // namespace ts::run
