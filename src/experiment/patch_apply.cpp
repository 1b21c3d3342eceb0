#include "experiment/patch_apply.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <simdjson.h>

#include "experiment/subprocess.h"

namespace ts::experiment {
namespace fs = std::filesystem;

namespace {

std::string str(simdjson::dom::element e, const char* key) {
  std::string_view v;
  return e[key].get_string().get(v) ? std::string() : std::string(v);
}

std::string last_line(const ChildResult& c) {
  for (auto it = c.err_tail.rbegin(); it != c.err_tail.rend(); ++it)
    if (!it->empty()) return *it;
  return fmt::format("exit status {}", c.exit_code);
}

}  // namespace

PatcherOutput run_patcher(const std::string& python, const std::string& agent_dir, const std::string& spec_path) {
  PatcherOutput out;
  ChildOptions opt;
  opt.argv = {python, "-m", "trainscope_agent.patch", spec_path};
  std::string pp = agent_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pp += std::string(":") + old;
  opt.env = {{"PYTHONPATH", pp}, {"PYTHONDONTWRITEBYTECODE", "1"}};
  opt.timeout_s = 120;
  ChildResult c = run_child(opt);
  if (c.spawn_failed) {
    out.problem = python + ": cannot start";
    return out;
  }
  if (c.timed_out || c.exit_code != 0) {
    out.problem = "the patcher failed: " + (c.timed_out ? std::string("timed out") : last_line(c));
    return out;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(c.out).get(doc) || !doc.is_object()) {
    out.problem = "the patcher's answer is not JSON";
    return out;
  }
  simdjson::dom::array arr;
  if (!doc["files"].get_array().get(arr))
    for (auto f : arr) {
      std::string_view v;
      if (!f.get_string().get(v)) out.files.emplace_back(v);
    }
  if (!doc["edits"].get_array().get(arr))
    for (auto e : arr) {
      PatcherEdit pe{str(e, "fix"), str(e, "file"), str(e, "what"), 0};
      int64_t line = 0;
      if (!e["line"].get_int64().get(line)) pe.line = line;
      out.edits.push_back(std::move(pe));
    }
  if (!doc["refused"].get_array().get(arr))
    for (auto r : arr) out.refused.push_back(str(r, "reason"));
  return out;
}

std::string copy_project(const fs::path& from, const fs::path& to, const std::vector<fs::path>& skip) {
  std::error_code ec;
  auto skipped = [&](const fs::path& p) {
    std::error_code e2;
    for (const auto& s : skip)
      if (fs::equivalent(p, s, e2)) return true;
    return false;
  };
  // Size first: nothing is copied when the folder is too large to copy for a measurement.
  uintmax_t bytes = 0;
  for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec) && skipped(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) bytes += it->file_size(ec);
    if (bytes > kMaxCopyBytes)
      return fmt::format("{} holds more than {} GiB: the patch is not measured on a copy of it", from.string(),
                         kMaxCopyBytes >> 30);
  }
  if (ec) return fmt::format("{}: cannot be read: {}", from.string(), ec.message());
  fs::create_directories(to, ec);
  if (ec) return fmt::format("{}: cannot create: {}", to.string(), ec.message());
  for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Lexical: fs::relative resolves symlinks, and put a link (data -> /datasets/x) at the
    // copy's ../../datasets/x, outside the copy.
    fs::path rel = it->path().lexically_relative(from);
    fs::path dst = to / rel;
    if (it->is_symlink(ec)) {
      fs::copy_symlink(it->path(), dst, ec);
    } else if (it->is_directory(ec)) {
      if (skipped(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      fs::create_directories(dst, ec);
    } else if (it->is_regular_file(ec)) {
      fs::copy_file(it->path(), dst, fs::copy_options::overwrite_existing, ec);
      // the copy is verify's to patch even where the user's file is read-only
      if (!ec) fs::permissions(dst, fs::perms::owner_write, fs::perm_options::add, ec);
    }
    if (ec) return fmt::format("{}: cannot copy: {}", it->path().string(), ec.message());
  }
  return ec ? fmt::format("{}: cannot copy: {}", from.string(), ec.message()) : "";
}

namespace {

// A folder's absolute, normal path, named by its last component ("a/b/" as "/.../a/b").
fs::path folder_path(const fs::path& p) {
  std::error_code ec;
  fs::path out = fs::absolute(p, ec).lexically_normal();
  return out.has_filename() ? out : out.parent_path();
}

}  // namespace

int link_siblings(const fs::path& from, const fs::path& to, const std::vector<std::string>& reserved) {
  const fs::path src = folder_path(from);
  const fs::path parent = src.parent_path(), self = src.filename();
  const fs::path dst_parent = folder_path(to).parent_path();
  if (parent.empty() || parent == parent.root_path()) return 0;
  std::error_code ec;
  std::vector<fs::path> entries;
  for (auto it = fs::directory_iterator(parent, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path name = it->path().filename();
    if (name == self || std::find(reserved.begin(), reserved.end(), name.string()) != reserved.end()) continue;
    if (entries.size() >= static_cast<size_t>(kMaxSiblingLinks)) return 0;
    entries.push_back(name);
  }
  int made = 0;
  for (const auto& name : entries) {
    std::error_code e2;
    if (fs::exists(fs::symlink_status(dst_parent / name, e2))) continue;
    fs::create_symlink(parent / name, dst_parent / name, e2);
    if (!e2) ++made;
  }
  return made;
}

fs::path mirrored_copy_path(const fs::path& from, const fs::path& root, int levels) {
  std::vector<fs::path> names;
  for (fs::path p = folder_path(from); names.size() < static_cast<size_t>(levels) && p.has_filename(); p = p.parent_path())
    names.push_back(p.filename());
  fs::path out = root;
  for (auto it = names.rbegin(); it != names.rend(); ++it) out /= *it;
  return out;
}

int link_ancestors(const fs::path& from, const fs::path& copy, int levels) {
  fs::path src = folder_path(from), dst = folder_path(copy);
  int made = 0;
  for (int k = 0; k < levels && src.has_filename() && dst.has_filename() && src.filename() == dst.filename(); ++k) {
    made += link_siblings(src, dst, {".git"});  // git in the copy never finds the user's repository
    src = src.parent_path();
    dst = dst.parent_path();
  }
  return made;
}

std::string apply_patch(const std::string& dir, const std::string& diff) {
  ChildOptions opt;
  opt.argv = {"patch", "-d", dir, "-p1", "-s", "-N", "--no-backup-if-mismatch", "-i", diff};
  opt.timeout_s = 60;
  ChildResult c = run_child(opt);
  if (c.spawn_failed) {
    opt.argv = {"git", "-C", dir, "apply", "-p1", diff};
    c = run_child(opt);
    if (c.spawn_failed) return "neither patch nor git is installed to apply it";
  }
  if (c.exit_code == 0) return "";
  std::string why = c.out.empty() ? last_line(c) : c.out.substr(0, c.out.find('\n'));
  return "it does not apply: " + why;
}

std::vector<std::string> command_in_copy(const std::vector<std::string>& command, const std::string& from,
                                         const std::string& to) {
  std::vector<std::string> out;
  std::string root = from.back() == '/' ? from : from + "/";
  for (const auto& a : command) {
    if (a.rfind(root, 0) == 0) out.push_back(to + "/" + a.substr(root.size()));
    else if (a == from) out.push_back(to);
    else out.push_back(a);
  }
  return out;
}

}  // namespace ts::experiment
