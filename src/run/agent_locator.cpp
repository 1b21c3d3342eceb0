#include "run/agent_locator.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "util/error.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {
bool has_agent(const fs::path& d) {
  std::error_code ec;
  return fs::exists(d / "sitecustomize.py", ec) && fs::exists(d / "trainscope_agent" / "__init__.py", ec);
}
}  // namespace

std::string locate_agent_dir() {
  if (const char* env = std::getenv("TRAINSCOPE_AGENT_DIR"); env && *env) {
    if (!has_agent(env)) throw UserError(std::string(env) + ": TRAINSCOPE_AGENT_DIR has no sitecustomize.py and trainscope_agent/");
    return fs::absolute(env).string();
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "trainscope" / "agent";
    if (has_agent(installed)) return installed.lexically_normal().string();
  }
  const char* tree = source_tree_agent_dir();
  if (tree && has_agent(tree)) return tree;
  throw UserError("cannot find the trainscope agent (looked next to " + exe.string() + " in ../share/trainscope/agent" +
                  (tree ? std::string(" and in ") + tree : std::string()) + "); set TRAINSCOPE_AGENT_DIR");
}

}  // namespace ts::run
