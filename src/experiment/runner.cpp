#include "experiment/runner.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "experiment/progress.h"
#include "experiment/subprocess.h"
#include "util/error.h"
#include "run/agent_locator.h"

namespace fs = std::filesystem;

namespace ts::experiment {

static constexpr std::string_view kResultPrefix = "@ts-result ";

double RunnerResult::num(const char* key, double dflt) const {
  if (!has_json) return dflt;
  auto v = json[key];
  if (v.error()) return dflt;
  double d;
  if (!v.get_double().get(d)) return d;
  int64_t i;
  if (!v.get_int64().get(i)) return double(i);
  uint64_t u;
  if (!v.get_uint64().get(u)) return double(u);
  return dflt;
}

int64_t RunnerResult::integer(const char* key, int64_t dflt) const {
  if (!has_json) return dflt;
  auto v = json[key];
  int64_t i;
  if (!v.error() && !v.get_int64().get(i)) return i;
  double d;
  if (!v.error() && !v.get_double().get(d)) return int64_t(d);
  return dflt;
}

bool RunnerResult::flag(const char* key, bool dflt) const {
  if (!has_json) return dflt;
  bool b;
  if (!json[key].get_bool().get(b)) return b;
  return dflt;
}

std::string RunnerResult::str(const char* key, const std::string& dflt) const {
  if (!has_json) return dflt;
  std::string_view s;
  if (!json[key].get_string().get(s)) return std::string(s);
  return dflt;
}

std::vector<double> RunnerResult::nums(const char* key) const {
  std::vector<double> out;
  if (!has_json) return out;
  simdjson::dom::array arr;
  if (json[key].get_array().get(arr)) return out;
  for (auto v : arr) {
    double d;
    int64_t i;
    if (!v.get_double().get(d)) out.push_back(d);
    else if (!v.get_int64().get(i)) out.push_back(double(i));
  }
  return out;
}

RunnerResult parse_runner_output(const std::string& out) {
  RunnerResult r;
  size_t pos = out.rfind(std::string(kResultPrefix));
  // Only a prefix at the start of a line counts: a model that prints the marker mid-line cannot fake it.
  while (pos != std::string::npos && pos > 0 && out[pos - 1] != '\n') {
    pos = pos == 0 ? std::string::npos : out.rfind(std::string(kResultPrefix), pos - 1);
  }
  if (pos == std::string::npos) {
    r.status = "error";
    r.reason = "the runner printed no result";
    return r;
  }
  size_t start = pos + kResultPrefix.size();
  size_t end = out.find('\n', start);
  std::string line = out.substr(start, end == std::string::npos ? std::string::npos : end - start);
  r.parser = std::make_shared<simdjson::dom::parser>();
  auto err = r.parser->parse(line).get(r.json);
  if (err || !r.json.is_object()) {
    r.status = "error";
    r.reason = fmt::format("the runner's result line is not a JSON object ({})", simdjson::error_message(err));
    return r;
  }
  r.has_json = true;
  r.status = r.str("status", "error");
  r.reason = r.str("reason");
  return r;
}

RunnerResult run_runner(const PythonEnv& py, const RunnerCall& call, ProgressBar* bar) {
  ChildOptions opt;
  opt.argv = {py.python, "-m", call.module};
  opt.argv.insert(opt.argv.end(), call.args.begin(), call.args.end());
  std::string pp = py.agent_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pp += std::string(":") + old;
  opt.env = call.env;
  opt.env.emplace_back("PYTHONPATH", pp);
  opt.env.emplace_back("PYTHONUNBUFFERED", "1");
  opt.timeout_s = call.timeout_s;
  opt.on_stderr_line = [&](std::string_view line) {
    if (!bar || line.rfind("@ts-progress ", 0) != 0) return;
    long done = 0, total = 0;
    char label[128] = {0};
    std::string s(line.substr(13));
    if (std::sscanf(s.c_str(), "%ld %ld %127[^\n]", &done, &total, label) >= 2) bar->update(done, total, label);
  };
  ChildResult c = run_child(opt);
  RunnerResult r = parse_runner_output(c.out);
  r.wall_s = c.wall_s;
  if (c.spawn_failed) {
    r.status = "error";
    r.reason = fmt::format("{}: cannot start", py.python);
  } else if (c.timed_out) {
    r.status = "error";
    r.reason = fmt::format("timed out after {:.0f} s (raise --timeout)", call.timeout_s);
  } else if (!r.has_json) {
    // Died before printing a result (a crash, a kill, an import error): its last stderr line says why.
    std::string why = c.err_tail.empty() ? "" : c.err_tail.back();
    if (c.term_signal) why = fmt::format("killed by signal {}{}{}", c.term_signal, why.empty() ? "" : ": ", why);
    else if (why.empty()) why = fmt::format("exited with status {} and printed no result", c.exit_code);
    r.reason = why;
  }
  return r;
}

// find_spec locates torch without importing it (an import costs a second or more per candidate).
static bool has_torch(const std::string& python) {
  ChildOptions opt;
  opt.argv = {python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"};
  opt.timeout_s = 60;
  ChildResult c = run_child(opt);
  return c.exit_code == 0 && !c.timed_out;
}

PythonEnv find_python(const std::string& requested) {
  PythonEnv env;
  env.agent_dir = run::locate_agent_dir();
  std::vector<std::string> tried;
  std::vector<std::string> candidates;
  if (!requested.empty()) {
    candidates = {requested};
  } else {
    if (const char* e = std::getenv("TRAINSCOPE_PYTHON"); e && *e) candidates.push_back(e);
    candidates.push_back("python3");
    candidates.push_back("/usr/bin/python3");
  }
  for (auto& c : candidates) {
    if (has_torch(c)) {
      env.python = c;
      return env;
    }
    tried.push_back(c);
  }
  std::string list;
  for (auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw UserError(fmt::format("no Python with torch found (tried {}); pass --python or set TRAINSCOPE_PYTHON", list));
}

}  // namespace ts::experiment
