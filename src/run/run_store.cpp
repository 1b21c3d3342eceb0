#include "run/run_store.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace ts::run {
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw UserError(p.string() + ": cannot read");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A run's output directory: report.txt for people, report.json for machines.
std::string show_dir(const fs::path& dir, bool json) {
  if (!fs::exists(dir / "report.json"))
    throw UserError(dir.string() + ": not a trainscope run directory (no report.json)");
  if (json) return slurp(dir / "report.json");
  if (fs::exists(dir / "report.txt")) return slurp(dir / "report.txt");
  return slurp(dir / "report.json");
}

}  // namespace

#ifndef TS_HAVE_STORE
int64_t store_run(const RunResult&, const RunOptions&) { return -1; }

std::string list_runs_text(const std::string&, int, bool) {
  throw UserError("runs: this build has no run store (src/store); look in trainscope-runs/ instead");
}

std::string show_run_text(const std::string&, const std::string& run, bool json, bool) {
  if (fs::is_directory(run)) return show_dir(run, json);
  throw UserError("report " + run + ": this build has no run store; pass a run's output directory");
}
#endif

}  // namespace ts::run
