#include "experiment/loader_sweep.h"

#include <sys/statvfs.h>

#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "experiment/evidence_fill.h"
#include "experiment/progress.h"
#include "experiment/runner.h"
#include "experiment/stats.h"
#include "util/error.h"
#include "util/format.h"

namespace ts::experiment {
namespace {

struct Sweep {
  const LoaderOptions& opt;
  PythonEnv py;
  LoaderResult& r;
  ProgressBar& bar;
  int planned;

  void run(LoaderPoint p, bool probe) {
    bar.start_config(int(r.points.size()), p.label());
    RunnerCall call;
    call.module = "trainscope_lab.loader_runner";
    call.args = {"--target", opt.target, "--num-workers", std::to_string(p.num_workers), "--pin-memory",
                 p.pin_memory ? "1" : "0", "--prefetch-factor", std::to_string(std::max(0, p.prefetch_factor)),
                 "--persistent", p.persistent_workers ? "1" : "0", "--batches", std::to_string(opt.batches),
                 "--epochs", std::to_string(opt.epochs)};
    if (probe) call.args.push_back("--probe");
    call.timeout_s = opt.timeout_s;
    RunnerResult rr = run_runner(py, call, &bar);
    if (rr.status == "error" && rr.reason.rfind("TargetError", 0) == 0)
      throw UserError(rr.reason.substr(13));  // names the file or the factory already
    p.status = rr.status;
    p.reason = rr.reason;
    p.wall_s = rr.wall_s;
    if (rr.has_json && rr.status == "ok") {
      p.prefetch_factor = int(rr.integer("prefetch_factor", p.prefetch_factor));
      p.batches_per_s = rr.num("batches_per_s");
      p.batch_ms_median = median(rr.nums("batch_ms"));
      p.first_batch_ms = rr.num("first_batch_ms");
      p.restart_ms = rr.num("restart_ms", -1);
      r.batch_size = rr.integer("batch_size", r.batch_size);
      r.dataset_batches = rr.integer("dataset_batches", r.dataset_batches);
      r.batch_bytes = std::max(r.batch_bytes, rr.integer("batch_bytes"));
      r.cuda = rr.flag("cuda_available", r.cuda);
      if (probe) {
        r.getitem_ms = rr.num("getitem_ms", -1);
        r.collate_ms = rr.num("collate_ms", -1);
      }
    }
    bar.end_config(p.ok() ? fmt::format("{:.1f} batches/s, first batch {:.0f} ms", p.batches_per_s, p.first_batch_ms)
                          : fmt::format("{}: {}", p.status, p.reason));
    r.points.push_back(std::move(p));
  }

  int best_index() const {
    int b = -1;
    for (size_t i = 0; i < r.points.size(); ++i)
      if (r.points[i].ok() && (b < 0 || r.points[i].batches_per_s > r.points[size_t(b)].batches_per_s)) b = int(i);
    return b;
  }
};

void check_shm(LoaderResult& r) {
  struct statvfs s;
  if (statvfs("/dev/shm", &s) != 0) return;
  r.shm_total_bytes = double(s.f_blocks) * double(s.f_frsize);
  r.shm_free_bytes = double(s.f_bavail) * double(s.f_frsize);
  if (r.recommended < 0) return;
  auto& p = r.points[size_t(r.recommended)];
  if (p.num_workers == 0) return;
  // Every batch a worker has prepared and not yet handed over sits in shared memory.
  r.shm_needed_bytes = double(p.num_workers) * std::max(p.prefetch_factor, 2) * double(r.batch_bytes);
  if (r.shm_needed_bytes > 0.5 * r.shm_free_bytes || r.shm_total_bytes < 256.0 * 1024 * 1024)
    r.warnings.push_back(fmt::format(
        "/dev/shm has {} free of {}; {} workers x prefetch {} x {} batches need about {}: workers may die with "
        "\"Bus error\" (Docker: run with --shm-size=8g or --ipc=host)",
        human_bytes(r.shm_free_bytes), human_bytes(r.shm_total_bytes), p.num_workers, std::max(p.prefetch_factor, 2),
        human_bytes(double(r.batch_bytes)), human_bytes(r.shm_needed_bytes)));
}

}  // namespace

LoaderResult run_loader_sweep(const LoaderOptions& opt) {
  LoaderResult r;
  r.target = opt.target;
  r.cores = opt.cores > 0 ? opt.cores : usable_cores();
  r.gpu_step_ms = opt.gpu_step_ms;
  std::vector<int> workers = opt.workers.empty() ? default_worker_counts(r.cores) : opt.workers;
  int planned = int(workers.size()) + int(opt.prefetch.size()) + (opt.try_persistent ? 1 : 0);
  ProgressBar bar("loader", planned, opt.progress);
  Sweep sw{opt, find_python(opt.python), r, bar, planned};

  // Stage 1: the worker count, everything else at PyTorch's defaults.
  for (size_t i = 0; i < workers.size(); ++i) {
    LoaderPoint p;
    p.num_workers = workers[i];
    p.prefetch_factor = workers[i] > 0 ? 2 : -1;
    sw.run(p, i == 0);
  }
  int b = sw.best_index();
  if (b < 0) {
    auto& p0 = r.points.front();
    throw UserError(fmt::format("{}: the loader failed at every worker count ({})", opt.target, p0.reason));
  }
  LoaderPoint base = r.points[size_t(b)];
  // Stage 2: pin_memory, only where there is a GPU to copy to.
  if (r.cuda) {
    LoaderPoint p = base;
    p.pin_memory = true;
    sw.run(p, false);
    int nb = sw.best_index();
    if (r.points[size_t(nb)].pin_memory) base = r.points[size_t(nb)];
  }
  // Stage 3: prefetch_factor and persistent_workers (meaningless with num_workers=0).
  if (base.num_workers > 0) {
    for (int pf : opt.prefetch) {
      LoaderPoint p = base;
      p.prefetch_factor = pf;
      sw.run(p, false);
    }
    if (opt.try_persistent) {
      LoaderPoint p = base;
      p.persistent_workers = true;
      sw.run(p, false);
    }
  }
  bar.finish();
  recommend_loader(r);
  check_shm(r);
  diagnose::Evidence ev;
  ev.loader = loader_evidence(r);
  r.findings = diagnose::diagnose(ev).findings;
  return r;
}

}  // namespace ts::experiment
