#include "experiment/compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <unistd.h>

#include <simdjson.h>

#include "analysis/trace_analysis.h"
#include "diagnose/diagnose.h"
#include "trace/reader.h"
#include "util/error.h"

#ifdef TS_HAVE_STORE
#include "store/store.h"
#endif

namespace fs = std::filesystem;

namespace ts::experiment {
namespace {

CompareFinding lite(const diagnose::Finding& f) {
  return {f.id, f.title, diagnose::severity_name(f.severity), f.recoverable_fraction};
}

// simdjson lookups that tolerate absent keys and ints-as-doubles.
double jnum(simdjson::dom::element e, double dflt = -1) {
  double d;
  if (!e.get_double().get(d)) return d;
  int64_t i;
  if (!e.get_int64().get(i)) return double(i);
  uint64_t u;
  if (!e.get_uint64().get(u)) return double(u);
  return dflt;
}
std::string jstr(simdjson::dom::element e) {
  std::string_view s;
  return e.get_string().get(s) ? std::string() : std::string(s);
}
simdjson::dom::element at(simdjson::dom::element e, std::initializer_list<const char*> path, bool& ok) {
  ok = true;
  for (const char* k : path) {
    simdjson::dom::element next;
    if (e.type() != simdjson::dom::element_type::OBJECT || e[k].get(next)) {
      ok = false;
      return e;
    }
    e = next;
  }
  return e;
}
double num_at(simdjson::dom::element root, std::initializer_list<const char*> path, double dflt = -1) {
  bool ok;
  auto e = at(root, path, ok);
  return ok ? jnum(e, dflt) : dflt;
}

// A report.json, not a trace: trainscope writes "schema" or "kind" first; traces never do.
bool looks_like_report(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char buf[512] = {0};
  f.read(buf, sizeof buf - 1);
  std::string head(buf, size_t(f.gcount()));
  return head.find("\"trainscope.report/") != std::string::npos || head.find("\"kind\": \"run\"") != std::string::npos ||
         head.find("\"kind\":\"run\"") != std::string::npos;
}

}  // namespace

CompareSide side_from_trace(const std::string& path, bool progress) {
  CompareSide s;
  s.label = path;
  s.kind = "trace";
  trace::ReadOptions ro;
  progress = progress && isatty(2);  // a redrawn percentage; pointless in a log
  if (progress)
    ro.progress = [&](uint64_t, uint64_t done, uint64_t size) {
      if (size > 0) fmt::print(stderr, "\r\033[Kcompare: reading {} {:.0f}%", fs::path(path).filename().string(), 100.0 * done / size);
    };
  trace::EventStore store = trace::read_trace(path, ro);
  if (progress) fmt::print(stderr, "\r\033[K");
  analysis::AnalyseOptions ao;
  ao.top = 1 << 30;  // every kernel: a kernel that vanished matters as much as one that grew
  analysis::TraceAnalysis t = analysis::analyse(store, ao);
  t.path = path;
  const auto& st = t.steps;
  s.device_name = t.device_name;
  s.steps = int64_t(st.steps.size());
  s.step_ms = st.median_step_ns / 1e6;
  const auto& b = st.total;
  const int64_t vals[8] = {b.kernel, b.memcpy, b.memset, b.communication, b.runtime, b.dataloader, b.cpu_exec, b.other};
  double n = std::max<int64_t>(1, s.steps);
  s.has_breakdown = st.total_ns > 0;
  for (int i = 0; i < 8; ++i) {
    s.class_ms[i] = vals[i] / 1e6 / n;
    s.class_pct[i] = st.pct(vals[i]);
  }
  if (t.gpu.present) s.gpu_idle_pct = t.gpu.idle_pct;
  for (const auto& k : t.kernels.top) s.kernels[k.name] = {double(k.count) / n, k.total_ns / 1e6 / n};
  diagnose::Evidence ev;
  ev.trace = std::move(t);
  for (const auto& f : diagnose::diagnose(ev).findings) s.findings.push_back(lite(f));
  return s;
}

namespace {
// One report's numbers; `label` names it in messages and in the comparison (a path, "run 7").
CompareSide side_from_report_root(simdjson::dom::element root, const std::string& label) {
  CompareSide s;
  s.label = label;
  s.kind = "run";
  if (root.type() != simdjson::dom::element_type::OBJECT) throw UserError(label + ": not a trainscope report");
  bool ok;
  simdjson::dom::array findings;
  auto fl = at(root, {"findings"}, ok);
  if (!ok) fl = at(root, {"diagnosis", "findings"}, ok);
  if (ok && !fl.get_array().get(findings)) {
    for (auto f : findings) {
      CompareFinding c;
      c.id = jstr(f["id"].value_unsafe());
      if (c.id.empty()) continue;
      bool has;
      c.title = jstr(at(f, {"title"}, has));
      c.severity = jstr(at(f, {"severity"}, has));
      c.recoverable_fraction = std::max(0.0, num_at(f, {"recoverable_fraction"}, 0));
      s.findings.push_back(std::move(c));
    }
  }
  simdjson::dom::array traces;
  simdjson::dom::element t0;
  bool have_trace = !root["traces"].get_array().get(traces) && traces.size() > 0 && !traces.at(0).get(t0);
  if (have_trace) {
    s.steps = int64_t(num_at(t0, {"steps", "count"}, 0));
    s.step_ms = num_at(t0, {"steps", "median_ms"});
    s.device_name = jstr(at(t0, {"device_name"}, ok));
    double n = std::max<int64_t>(1, s.steps);
    for (int i = 0; i < 8; ++i) {
      double ms = num_at(t0, {"step_breakdown_ms", analysis::kBreakdownClasses[i]});
      double pct = num_at(t0, {"step_breakdown_pct", analysis::kBreakdownClasses[i]});
      if (ms >= 0) s.has_breakdown = true, s.class_ms[i] = ms / n, s.class_pct[i] = std::max(0.0, pct);
    }
    bool present = false;
    if (!t0["gpu"]["present"].get_bool().get(present) && present) s.gpu_idle_pct = num_at(t0, {"gpu", "idle_pct"});
    simdjson::dom::array top;
    if (!t0["kernels"]["top"].get_array().get(top))
      for (auto k : top)
        s.kernels[jstr(k["name"].value_unsafe())] = {num_at(k, {"count"}, 0) / n, num_at(k, {"total_ms"}, 0) / n};
  }
  // The agent's view of the run (no trace, or in addition to it).
  double agent_step = num_at(root, {"agent", "step_ms"});
  if (agent_step < 0) agent_step = num_at(root, {"run", "agent", "summary", "step_ms"});
  if (s.step_ms < 0 && agent_step >= 0) {
    s.step_ms = agent_step;
    s.steps = int64_t(std::max(num_at(root, {"agent", "steps"}, 0), num_at(root, {"run", "agent", "steps"}, 0)));
  }
  s.gpu_ms = num_at(root, {"agent", "gpu_ms"});
  if (s.gpu_ms < 0) s.gpu_ms = num_at(root, {"run", "agent", "summary", "gpu_ms"});
  s.data_wait_pct = num_at(root, {"agent", "data_wait_pct"});
  if (s.data_wait_pct < 0) s.data_wait_pct = num_at(root, {"run", "agent", "summary", "data_wait_pct"});
  // The whole run (docs/SCHEMA.md run.time_account): a fix that trades compilation or start-up for
  // step time shows here.
  for (const char* k : {"total_s", "before_first_step_s", "compile_s", "train_steps_s", "data_wait_s", "eval_s",
                        "checkpoint_s", "profiler_s", "other_s", "goodput_pct"}) {
    const double v = num_at(root, {"run", "time_account", k});
    if (v >= 0) s.account.emplace_back(k, v);
  }
  if (s.step_ms < 0 && s.findings.empty())
    throw UserError(label + ": a JSON file with neither step times nor findings (not a trainscope report?)");
  return s;
}
}  // namespace

CompareSide side_from_report_json(const std::string& path) {
  simdjson::dom::parser p;
  simdjson::dom::element root;
  if (auto err = p.load(path).get(root))
    throw UserError(fmt::format("{}: not readable as JSON ({})", path, simdjson::error_message(err)));
  return side_from_report_root(root, path);
}

CompareSide load_side(const std::string& what, bool progress) {
  std::error_code ec;
  if (fs::is_directory(what, ec)) {
    fs::path rep = fs::path(what) / "report.json";
    if (!fs::exists(rep)) throw UserError(what + ": a folder without report.json (not a `trainscope run` output folder)");
    CompareSide s = side_from_report_json(rep.string());
    s.label = what;
    return s;
  }
  if (fs::exists(what, ec)) return looks_like_report(what) ? side_from_report_json(what) : side_from_trace(what, progress);
  bool digits = !what.empty() && std::all_of(what.begin(), what.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits || what == "last") {
#ifdef TS_HAVE_STORE
    store::Store st(store::Store::default_path());
    int64_t id = -1;
    if (what == "last") {
      for (auto& r : st.list_runs())
        if (r.has_report) {
          id = r.id;
          break;
        }
    } else {
      id = std::stoll(what);
    }
    auto rep = id >= 0 ? st.get_report(id) : std::nullopt;
    if (!rep) throw UserError(fmt::format("run {}: no such run with a report in {}", what, st.path()));
    // Parsed from memory: no temporary file another user could predict and plant in /tmp.
    std::string label = fmt::format("run {}", id);
    simdjson::dom::parser p;
    simdjson::dom::element root;
    if (auto err = p.parse(*rep).get(root))
      throw UserError(fmt::format("{}: its stored report is not JSON ({})", label, simdjson::error_message(err)));
    return side_from_report_root(root, label);
#else
    throw UserError(fmt::format("{}: run ids need the recording store, which this build lacks; give the run's output "
                                "folder instead",
                                what));
#endif
  }
  throw UserError(what + ": no such file or folder");
}

CompareResult compare_sides(CompareSide a, CompareSide b, int top_kernels) {
  CompareResult r;
  r.a = std::move(a);
  r.b = std::move(b);
  if (r.a.step_ms > 0 && r.b.step_ms >= 0) {
    r.step_change_pct = 100.0 * (r.b.step_ms - r.a.step_ms) / r.a.step_ms;
    r.speedup = r.b.step_ms > 0 ? r.a.step_ms / r.b.step_ms : 0;
  }
  if (r.a.has_breakdown && r.b.has_breakdown)
    for (int i = 0; i < 8; ++i)
      r.classes.push_back({analysis::kBreakdownClasses[i], r.a.class_ms[i], r.b.class_ms[i], r.a.class_pct[i],
                           r.b.class_pct[i]});
  std::set<std::string> names;
  for (auto& [k, v] : r.a.kernels) names.insert(k);
  for (auto& [k, v] : r.b.kernels) names.insert(k);
  for (auto& n : names) {
    CompareKernelRow row;
    row.name = n;
    if (auto it = r.a.kernels.find(n); it != r.a.kernels.end()) row.a = it->second;
    if (auto it = r.b.kernels.find(n); it != r.b.kernels.end()) row.b = it->second;
    r.kernels.push_back(std::move(row));
  }
  std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const CompareKernelRow& x, const CompareKernelRow& y) {
    return std::abs(x.b.ms_per_step - x.a.ms_per_step) > std::abs(y.b.ms_per_step - y.a.ms_per_step);
  });
  if (top_kernels >= 0 && r.kernels.size() > size_t(top_kernels)) r.kernels.resize(size_t(top_kernels));
  auto has = [](const std::vector<CompareFinding>& v, const std::string& id) {
    return std::any_of(v.begin(), v.end(), [&](const CompareFinding& f) { return f.id == id; });
  };
  for (auto& f : r.a.findings) (has(r.b.findings, f.id) ? r.kept : r.resolved).push_back(f);
  for (auto& f : r.b.findings)
    if (!has(r.a.findings, f.id)) r.added.push_back(f);
  return r;
}

}  // namespace ts::experiment
