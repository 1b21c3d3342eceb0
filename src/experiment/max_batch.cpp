#include "experiment/max_batch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "experiment/progress.h"
#include "experiment/runner.h"
#include "experiment/stats.h"
#include "util/error.h"

namespace ts::experiment {

double parse_bytes(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit((unsigned char)s[i]) || s[i] == '.')) ++i;
  if (i == 0) throw UserError(fmt::format("'{}': not a size (e.g. 512MiB, 16GB, 268435456)", s));
  double v = std::atof(s.substr(0, i).c_str());
  std::string u = s.substr(i);
  std::string lu;
  for (char c : u) lu += char(std::tolower((unsigned char)c));
  static const std::pair<const char*, double> units[] = {
      {"", 1},           {"b", 1},          {"k", 1024.0},      {"kib", 1024.0},  {"kb", 1e3},
      {"m", 1048576.0},  {"mib", 1048576.0}, {"mb", 1e6},        {"g", 1073741824.0}, {"gib", 1073741824.0},
      {"gb", 1e9},       {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
  for (auto& [name, mult] : units)
    if (lu == name) return v * mult;
  throw UserError(fmt::format("'{}': unknown unit '{}' (use B, KiB, MiB, GiB, kB, MB, GB)", s, u));
}

void read_max_batch(MaxBatchResult& r, double headroom) {
  std::vector<double> x, y;
  for (auto& t : r.trials)
    if (t.fits) x.push_back(double(t.batch)), y.push_back(t.peak_bytes);
  LinearFit f = fit_line(x, y);
  r.bytes_per_sample = f.slope;
  r.fixed_bytes = f.intercept;
  int64_t rec = r.max_batch;
  if (f.slope > 0 && r.capacity_bytes > 0) {
    double budget = (1.0 - headroom) * r.capacity_bytes;
    rec = std::min<int64_t>(r.max_batch, int64_t(std::floor((budget - f.intercept) / f.slope)));
  } else {
    rec = int64_t(std::floor(r.max_batch * (1.0 - headroom)));
  }
  if (rec >= 16) rec -= rec % 8;  // multiples of 8 keep half-precision GEMMs on tensor cores
  r.recommended_batch = std::max<int64_t>(rec, r.max_batch > 0 ? 1 : 0);
}

MaxBatchResult run_max_batch(const MaxBatchOptions& opt) {
  PythonEnv py = find_python(opt.python);
  ProgressBar bar("max-batch", 1, opt.progress);
  bar.start_config(0, "doubling, then binary search");
  RunnerCall call;
  call.module = "trainscope_lab.maxbatch_runner";
  call.args = {"--target", opt.target, "--device", opt.device, "--start", std::to_string(opt.start), "--cap",
               std::to_string(opt.cap), "--config", opt.config, "--memory-limit",
               fmt::format("{}", int64_t(opt.memory_limit_bytes))};
  call.timeout_s = opt.timeout_s;
  // A fixed mmap threshold for the trials' process: with glibc's default, each large tensor freed
  // raises the threshold to its size (up to 32 MiB), later ones of that size come from the heap,
  // and whether a freed one is reused there varies from process to process: the same step on
  // examples/lab wide_activations peaked one activation higher (+1 MiB per sample, +33%) in about
  // one trial in five, with the load, pinning, ASLR, the hash seed or the cyclic GC ruled out. A
  // fixed threshold (glibc mallopt(3): it also ends the dynamic adjustment) maps each large tensor
  // apart and unmaps it when freed, so the peak RSS is the step's live tensors: 8 runs of 8 trials
  // each the same within 0.3 MiB. The user's own setting is kept.
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) call.env.emplace_back("MALLOC_MMAP_THRESHOLD_", "131072");
  RunnerResult rr = run_runner(py, call, &bar);
  if (rr.status != "ok") {
    bar.end_config("failed");
    if (rr.reason.rfind("TargetError: ", 0) == 0) throw UserError(rr.reason.substr(13));
    throw UserError(fmt::format("{}: max-batch: {}", opt.target, rr.reason));
  }
  MaxBatchResult r;
  r.target = opt.target;
  r.config = opt.config;
  r.device = rr.str("device");
  r.device_name = rr.str("device_name");
  r.torch_version = rr.str("torch_version");
  r.capacity_bytes = rr.num("capacity_bytes");
  r.param_bytes = rr.num("param_bytes");
  r.optimizer_state_bytes = rr.num("optimizer_state_bytes");
  r.max_batch = rr.integer("max_batch");
  r.first_miss = rr.integer("first_miss", -1);
  r.cap_reached = rr.flag("cap_reached");
  r.leak_bytes = rr.num("leak_bytes");
  r.leak_kind = rr.str("leak_kind");
  r.context_ok = rr.flag("context_ok", true);
  r.search_s = rr.num("search_s");
  simdjson::dom::array arr;
  if (!rr.json["trials"].get_array().get(arr)) {
    for (auto t : arr) {
      MaxBatchTrial tr;
      int64_t b;
      if (!t["batch"].get_int64().get(b)) tr.batch = b;
      bool fits;
      if (!t["fits"].get_bool().get(fits)) tr.fits = fits;
      double d;
      int64_t i;
      if (!t["peak_bytes"].get_double().get(d)) tr.peak_bytes = d;
      else if (!t["peak_bytes"].get_int64().get(i)) tr.peak_bytes = double(i);
      std::string_view why;
      if (!t["why"].get_string().get(why)) tr.why = std::string(why);
      r.trials.push_back(std::move(tr));
    }
  }
  bar.end_config(fmt::format("max batch {} ({} trials)", r.max_batch, r.trials.size()));
  bar.finish();
  read_max_batch(r, opt.headroom);
  return r;
}

}  // namespace ts::experiment
