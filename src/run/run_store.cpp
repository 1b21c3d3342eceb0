#include "run/run_store.h"

#include <simdjson.h>

#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <sstream>

#include "store/store.h"
#include "util/error.h"
#include "util/json_writer.h"
#include "util/redact.h"

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

std::string when(double unix_s, bool brief = false) {
  if (unix_s <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, brief ? "%m-%d %H:%M" : "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string open_path(const std::string& p) { return p.empty() ? store::Store::default_path() : p; }

// What `runs` and `report` show of a stored result, read back from its JSON: a `run`'s report
// (verdict, output directory, findings) or an experiment's result (lab, loader, max-batch: a
// one-line summary of its outcome and its findings).
struct Brief {
  std::string verdict, out_dir;
  std::string why;  // an experiment's reason for its recommendation
  std::vector<std::string> findings;
};

std::string str_at(simdjson::dom::element e, const char* k) {
  std::string_view sv;
  return e[k].get(sv) ? std::string() : std::string(sv);
}
bool bool_at(simdjson::dom::element e, const char* k) {
  bool b = false;
  return !e[k].get(b) && b;
}
double num_at(simdjson::dom::element e, const char* k, double dflt = -1) {
  double d;
  if (!e[k].get(d)) return d;
  int64_t i;
  if (!e[k].get(i)) return double(i);
  return dflt;
}

// The line an experiment's result leads with (its own text reports have the tables).
std::string experiment_summary(const std::string& kind, simdjson::dom::element doc) {
  if (kind == "lab") {
    simdjson::dom::array readings;
    if (!doc["readings"].get(readings))
      for (auto rd : readings) return str_at(rd, "text");
    // No reading (fewer than two configurations ran): the fastest configuration.
    simdjson::dom::array configs;
    std::string best;
    double best_sps = 0;
    int ok = 0;
    if (!doc["configs"].get(configs))
      for (auto c : configs) {
        if (str_at(c, "status") != "ok") continue;
        ++ok;
        if (double sps = num_at(c, "samples_per_s"); sps > best_sps) best_sps = sps, best = str_at(c, "name");
      }
    if (best.empty()) return "no configuration ran to the end";
    return fmt::format("{}: {:.1f} samples/s ({} configuration{} ran)", best, best_sps, ok, ok == 1 ? "" : "s");
  }
  if (kind == "loader") {
    simdjson::dom::array points;
    int64_t rec = int64_t(num_at(doc, "recommended"));
    if (rec >= 0 && !doc["points"].get(points) && size_t(rec) < points.size()) {
      auto p = points.at(size_t(rec)).value_unsafe();
      int64_t workers = int64_t(num_at(p, "num_workers"));
      std::string setting = fmt::format("num_workers={}, pin_memory={}", workers, bool_at(p, "pin_memory") ? "True" : "False");
      // prefetch_factor and persistent_workers mean nothing without workers.
      if (workers > 0)
        setting += fmt::format(", prefetch_factor={}, persistent_workers={}", int64_t(num_at(p, "prefetch_factor")),
                               bool_at(p, "persistent_workers") ? "True" : "False");
      return fmt::format("recommended: {} ({:.1f} batches/s)", setting, num_at(p, "batches_per_s", 0));
    }
    return "no recommendation (no setting ran to the end)";
  }
  if (kind == "verify") {
    // Its own verdict leads (brief() reads it); this is for a result stored without one.
    return "verified fixes: see `trainscope report ID --json`";
  }
  if (kind == "max-batch") {
    int64_t mb = int64_t(num_at(doc, "max_batch", 0)), rec = int64_t(num_at(doc, "recommended_batch", 0));
    if (mb <= 0) return "no batch size fit";
    return fmt::format("largest batch that fits: {}{}; recommended: {}", mb, bool_at(doc, "cap_reached") ? " (search cap)" : "", rec);
  }
  return "";
}

Brief brief(const std::string& kind, const std::string& json) {
  Brief b;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc)) return b;
  std::string_view sv;
  if (!doc["verdict"].get(sv)) b.verdict = sv;
  else b.verdict = experiment_summary(kind, doc);
  if (!doc["run"]["out_dir"].get(sv)) b.out_dir = sv;
  if (kind != "run") b.why = str_at(doc, "why");
  simdjson::dom::array arr;
  if (!doc["findings"].get(arr))
    for (auto f : arr) {
      std::string_view id, title;
      if (!f["id"].get(id) && !f["title"].get(title)) b.findings.push_back(fmt::format("{}  ({})", title, id));
    }
  return b;
}

// A recording without a report (watch): what it holds.
std::string samples_summary(const store::RunInfo& r) {
  return fmt::format("{} GPU, {} host, {} process samples", r.gpu_samples, r.host_samples, r.process_samples);
}

std::string truncated(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n - 3) + "..." : s; }

}  // namespace

const std::vector<std::string>& stored_kinds() {
  static const std::vector<std::string> k = {"run", "lab", "loader", "max-batch", "watch", "verify"};
  return k;
}

std::string list_runs_text(const std::string& store_path, int limit, bool json, const std::string& kind, int width) {
  // id, kind, started, exit and their gaps take 48 columns (39 with the short time a narrow
  // terminal gets); command and verdict share the rest.
  size_t cmd_w = 40, verdict_w = 70;
  bool brief_time = width > 0 && width < 130;
  size_t time_w = brief_time ? 13 : 20;
  if (width > 0) {
    int rest = std::max(32, width - int(time_w) - 28 - 1);
    cmd_w = size_t(std::clamp(rest / 3, 12, 40));
    verdict_w = size_t(std::max(20, rest - int(cmd_w)));
  }
  std::string path = open_path(store_path);
  if (!fs::exists(path)) {
    if (json) return "[]\n";
    return fmt::format("nothing recorded yet ({} does not exist): `trainscope run -- python train.py` records a run\n", path);
  }
  store::Store st(path);
  auto runs = st.list_runs();
  JsonWriter w;
  std::string out;
  if (json) w.begin_array();
  else out = fmt::format("{:>5}  {:<9}  {:<{}}  {:>4}  {:<{}}  {}\n", "id", "kind", "started (UTC)", time_w, "exit", "command", cmd_w,
                         truncated("verdict / result", verdict_w));
  int n = 0;
  for (const auto& r : runs) {
    if (!kind.empty() && r.kind != kind) continue;
    if (limit > 0 && n >= limit) break;
    ++n;
    Brief b;
    if (r.has_report) {
      if (auto rep = st.get_report(r.id)) b = brief(r.kind, *rep);
    } else if (r.kind == "watch") {
      b.verdict = samples_summary(r);
    }
    if (json) {
      w.begin_object().field("id", r.id).field("kind", r.kind).field("started_unix", r.started_unix).field("finished_unix", r.finished_unix);
      w.field("exit_code", r.exit_code).field("command", redact_command_line(r.command)).field("verdict", b.verdict).field("out_dir", b.out_dir);
      w.field("has_report", r.has_report);
      w.end_object();
    } else {
      out += fmt::format("{:>5}  {:<9}  {:<{}}  {:>4}  {:<{}}  {}\n", r.id, r.kind, when(r.started_unix, brief_time), time_w,
                         r.exit_code >= 0 ? std::to_string(r.exit_code) : "-", truncated(redact_command_line(r.command), cmd_w), cmd_w,
                         truncated(b.verdict, verdict_w));
    }
  }
  if (json) {
    w.end_array();
    return w.take() + "\n";
  }
  if (n == 0) out += kind.empty() ? "(nothing recorded yet)\n" : fmt::format("(no {} recorded yet)\n", kind);
  return out;
}

namespace {

// The stored entry RUN names (an id or "last") and its report, if it has one.
struct Stored {
  store::RunInfo info;
  std::optional<std::string> report;
};
Stored find_stored(const std::string& store_path, const std::string& run) {
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
      throw UserError("report " + run + ": expected an id (see `trainscope runs`), 'last' or a run directory");
    }
  }
  auto info = st.get_run(id);
  if (!info) throw UserError(fmt::format("report {}: nothing with this id in {}", run, path));
  return {*info, st.get_report(id)};
}

// `report ID` of a watch recording: it holds samples, not a report.
std::string recording_text(const store::RunInfo& r, bool json) {
  if (json) {
    JsonWriter w;
    w.begin_object().field("id", r.id).field("kind", r.kind).field("command", redact_command_line(r.command)).field("hostname", r.hostname);
    w.field("started_unix", r.started_unix).field("finished_unix", r.finished_unix).field("interval_ms", r.interval_ms);
    w.key("samples").begin_object().field("gpu", r.gpu_samples).field("host", r.host_samples).field("process", r.process_samples).end_object();
    w.end_object();
    return w.take() + "\n";
  }
  double dur = r.finished_unix > 0 ? r.finished_unix - r.started_unix : -1;
  return fmt::format("{} {}: {}  [{}, {}]\n{} every {:.0f} ms.\n"
                     "A {} recording keeps hardware samples, not a diagnosis: it has no report to show.\n",
                     r.kind, r.id, redact_command_line(r.command), when(r.started_unix), dur >= 0 ? fmt::format("{:.1f} s", dur) : "did not finish",
                     samples_summary(r), r.interval_ms, r.kind);
}

}  // namespace

std::string show_run_html(const std::string& store_path, const std::string& run) {
  fs::path dir = run;
  if (!fs::is_directory(dir)) {
    Stored s = find_stored(store_path, run);
    if (s.info.kind != "run")
      throw UserError(fmt::format("report {}: a {} result has no HTML report (`trainscope report {}` shows it, --json has everything)",
                                  run, s.info.kind, run));
    if (!s.report) throw UserError(fmt::format("report {}: the run has no report (it did not finish?)", run));
    dir = brief(s.info.kind, *s.report).out_dir;
  }
  if (!fs::exists(dir / "report.html"))
    throw UserError("report " + run + ": no report.html in " + dir.string() + " (the run's directory is gone?)");
  return slurp(dir / "report.html");
}

std::string show_run_text(const std::string& store_path, const std::string& run, bool json, bool) {
  if (fs::is_directory(run)) return show_dir(run, json);
  Stored s = find_stored(store_path, run);
  const auto& info = s.info;
  if (!s.report) {
    if (info.kind == "watch") return recording_text(info, json);
    throw UserError(fmt::format("report {}: the {} has no report (it did not finish?)", run, info.kind));
  }
  const std::string& rep = *s.report;
  if (json) return rep + (rep.empty() || rep.back() != '\n' ? "\n" : "");
  Brief b = brief(info.kind, rep);
  if (info.kind == "run" && !b.out_dir.empty() && fs::exists(fs::path(b.out_dir) / "report.txt"))
    return slurp(fs::path(b.out_dir) / "report.txt");
  if (info.kind == "verify") {  // its table, as printed (experiment/verify_report.cpp writes it)
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string dir = parser.parse(rep).get(doc) ? std::string() : str_at(doc, "out_dir");
    if (!dir.empty() && fs::exists(fs::path(dir) / "verify.txt")) return slurp(fs::path(dir) / "verify.txt");
  }
  // A run whose directory is gone, or an experiment (lab, loader, max-batch), whose tables are
  // in its JSON: the verdict or outcome and the findings.
  std::string out = fmt::format("{} {}: {}  [exit {}, {}]\n{}\n", info.kind, info.id, redact_command_line(info.command), info.exit_code,
                                when(info.started_unix), b.verdict);
  if (!b.why.empty()) out += "  why: " + b.why + "\n";
  int i = 0;
  for (const auto& f : b.findings) out += fmt::format(" {}. {}\n", ++i, f);
  if (info.kind == "run")
    out += "(the run's directory is gone; `trainscope report " + run + " --json` has everything)\n";
  else
    out += fmt::format("(the {} result's tables and every measurement: `trainscope report {} --json`)\n", info.kind, run);
  return out;
}

}  // namespace ts::run
