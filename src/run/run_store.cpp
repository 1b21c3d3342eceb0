#include "run/run_store.h"

#include <simdjson.h>

#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "store/store.h"
#include "util/error.h"
#include "util/json_writer.h"

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

std::string show_dir(const fs::path& dir, bool json) {
  if (!fs::exists(dir / "report.json"))
    throw UserError(dir.string() + ": not a trainscope run directory (no report.json)");
  if (json) return slurp(dir / "report.json");
  if (fs::exists(dir / "report.txt")) return slurp(dir / "report.txt");
  return slurp(dir / "report.json");
}

std::string when(double unix_s) {
  if (unix_s <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string open_path(const std::string& p) { return p.empty() ? store::Store::default_path() : p; }

// The verdict and output directory of a stored report (for the runs list and for `report`
// when the run's directory is gone).
struct Brief {
  std::string verdict, out_dir;
  std::vector<std::string> findings;
};
Brief brief(const std::string& json) {
  Brief b;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc)) return b;
  std::string_view sv;
  if (!doc["verdict"].get(sv)) b.verdict = sv;
  if (!doc["run"]["out_dir"].get(sv)) b.out_dir = sv;
  simdjson::dom::array arr;
  if (!doc["findings"].get(arr))
    for (auto f : arr) {
      std::string_view id, title;
      if (!f["id"].get(id) && !f["title"].get(title)) b.findings.push_back(fmt::format("{}  ({})", title, id));
    }
  return b;
}

}  // namespace

std::string list_runs_text(const std::string& store_path, int limit, bool json) {
  std::string path = open_path(store_path);
  if (!fs::exists(path)) {
    if (json) return "[]\n";
    return fmt::format("no runs recorded yet ({} does not exist): `trainscope run -- python train.py` records one\n", path);
  }
  store::Store st(path);
  auto runs = st.list_runs();
  JsonWriter w;
  std::string out;
  if (json) w.begin_array();
  else out = fmt::format("{:>5}  {:<20}  {:>6}  {:<44}  {}\n", "id", "started (UTC)", "exit", "command", "verdict");
  int n = 0;
  for (const auto& r : runs) {
    if (r.kind != "run") continue;
    if (limit > 0 && n++ >= limit) break;
    Brief b;
    if (r.has_report)
      if (auto rep = st.get_report(r.id)) b = brief(*rep);
    if (json) {
      w.begin_object().field("id", r.id).field("started_unix", r.started_unix).field("finished_unix", r.finished_unix);
      w.field("exit_code", r.exit_code).field("command", r.command).field("verdict", b.verdict).field("out_dir", b.out_dir);
      w.end_object();
    } else {
      std::string cmd = r.command.size() > 44 ? r.command.substr(0, 41) + "..." : r.command;
      std::string verdict = b.verdict.size() > 70 ? b.verdict.substr(0, 67) + "..." : b.verdict;
      out += fmt::format("{:>5}  {:<20}  {:>6}  {:<44}  {}\n", r.id, when(r.started_unix),
                         r.exit_code >= 0 ? std::to_string(r.exit_code) : "-", cmd, verdict);
    }
  }
  if (json) {
    w.end_array();
    return w.take() + "\n";
  }
  if (n == 0) out += "(no runs yet)\n";
  return out;
}

std::string show_run_html(const std::string& store_path, const std::string& run) {
  fs::path dir = run;
  if (!fs::is_directory(dir)) {
    Brief b = brief(show_run_text(store_path, run, true, false));
    dir = b.out_dir;
  }
  if (!fs::exists(dir / "report.html"))
    throw UserError("report " + run + ": no report.html in " + dir.string() + " (the run's directory is gone?)");
  return slurp(dir / "report.html");
}

std::string show_run_text(const std::string& store_path, const std::string& run, bool json, bool) {
  if (fs::is_directory(run)) return show_dir(run, json);
  std::string path = open_path(store_path);
  if (!fs::exists(path)) throw UserError(fmt::format("report {}: no run store at {} (and no such directory)", run, path));
  store::Store st(path);
  int64_t id = -1;
  if (run == "last") {
    for (const auto& r : st.list_runs())
      if (r.kind == "run") {
        id = r.id;
        break;
      }
    if (id < 0) throw UserError("report last: no runs recorded in " + path);
  } else {
    try {
      size_t used = 0;
      id = std::stoll(run, &used);
      if (used != run.size()) throw std::invalid_argument(run);
    } catch (const std::exception&) {
      throw UserError("report " + run + ": expected a run id (see `trainscope runs`), 'last' or a run directory");
    }
  }
  auto info = st.get_run(id);
  if (!info) throw UserError(fmt::format("report {}: no such run in {}", run, path));
  auto rep = st.get_report(id);
  if (!rep) throw UserError(fmt::format("report {}: the run has no report (it did not finish?)", run));
  if (json) return *rep + (rep->empty() || rep->back() != '\n' ? "\n" : "");
  Brief b = brief(*rep);
  if (!b.out_dir.empty() && fs::exists(fs::path(b.out_dir) / "report.txt")) return slurp(fs::path(b.out_dir) / "report.txt");
  // The directory is gone: what the stored report says.
  std::string out = fmt::format("run {}: {}  [exit {}, {}]\n{}\n", id, info->command, info->exit_code,
                                when(info->started_unix), b.verdict);
  int i = 0;
  for (const auto& f : b.findings) out += fmt::format(" {}. {}\n", ++i, f);
  out += "(the run's directory is gone; `trainscope report " + run + " --json` has everything)\n";
  return out;
}

}  // namespace ts::run
