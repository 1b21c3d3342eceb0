// worker-restarts: a DataLoader's worker processes start again for every pass over its data, and
// the loop waits for them each time. Without persistent_workers, each `for batch in loader` shuts
// the pass's workers down at its end and starts new ones for the next (PyTorch docs,
// torch.utils.data.DataLoader: persistent_workers); a loader built anew every epoch does the same
// whatever its settings, and `next(iter(loader))` in the loop does it every step.
// Evidence: the agent's dataloader sites (hooks_data.py): the first fetches over workers at each
// line, and of them those of a loader whose workers had started before (restarts) or of a new
// loader over a dataset already loaded at that line (rebuilds), each with the loop's wait in it;
// the run's time account (the run's scale).
// Fires when what the fix gives back is >= kWorkerRestartRunPct of the run.
// Gain, on the run's scale: the waits of the restarts and rebuilds, less what each pass still waits
// with workers kept: one worker loading the pass's first batch (the measured per-sample __getitem__
// times the batch, plus collate_fn), as persistent workers only start loading when the pass begins.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {
namespace {

// The batch size of the loader built at this line (-1 unknown).
int64_t batch_at(const AgentEvidence& a, const CodeSite& s) {
  for (const auto& l : a.loaders)
    if (l.site_file == s.file && l.site_line == s.line && l.batch_size > 0) return l.batch_size;
  return a.loaders.size() == 1 ? a.loaders[0].batch_size : -1;
}

struct Line {
  const CodeSite* site;
  int64_t again = 0;   // restarts + rebuilds
  double gain_ms = 0;  // their waits less one batch's loading each
};

}  // namespace

std::optional<Finding> worker_restarts(const Evidence& ev) {
  if (!ev.agent || !ev.agent->time_account || ev.agent->time_account->job_s() <= 0) return std::nullopt;
  const AgentEvidence& a = *ev.agent;
  const TimeAccount& t = *a.time_account;
  std::vector<Line> lines;
  double gain_ms = 0, wait_ms = 0;
  int64_t again = 0, restarts = 0, rebuilds = 0;
  for (const auto& s : a.sites) {
    if (s.role != "dataloader" || s.restarts + s.rebuilds <= 0) continue;
    const int64_t n = s.restarts + s.rebuilds;
    const int64_t batch = batch_at(a, s);
    const double refill_ms = a.sample_getitem_ms >= 0 && batch > 0
                                 ? a.sample_getitem_ms * static_cast<double>(batch) + std::max(0.0, a.collate_ms)
                                 : 0;
    const double wait = s.restart_ms + s.rebuild_ms;
    const double gain = std::max(0.0, wait - static_cast<double>(n) * refill_ms);
    lines.push_back({&s, n, gain});
    gain_ms += gain;
    wait_ms += wait;
    again += n;
    restarts += s.restarts;
    rebuilds += s.rebuilds;
  }
  const double run_ms = 1e3 * t.job_s();
  if (lines.empty() || 100 * gain_ms / run_ms < th::kWorkerRestartRunPct) return std::nullopt;
  std::sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) { return x.gain_ms > y.gain_ms; });
  // One start per step or more: the loop takes a new iterator every step (next(iter(loader))).
  const bool per_step = t.steps > 0 && static_cast<double>(again) >= 0.5 * static_cast<double>(t.steps);

  Finding f = make("worker-restarts", Bottleneck::DataPipeline, "agent");
  f.outside_step = true;
  add(f, "worker_starts_again", static_cast<double>(again), "count");
  add(f, "restarts", static_cast<double>(restarts), "count");
  add(f, "rebuilds", static_cast<double>(rebuilds), "count");
  add(f, "wait_for_starts_s", wait_ms / 1e3, "s");
  add(f, "gain_s", gain_ms / 1e3, "s");
  add(f, "run_s", t.job_s(), "s");
  f.run_fraction = std::clamp(gain_ms / run_ms, 0.0, 0.95);
  f.recoverable_fraction = f.run_fraction;
  f.severity = severity_for(f.run_fraction);
  f.confidence = 0.85;
  f.title = fmt::format("DataLoader workers started again {} time{}{}: the loop waited {:.1f} s ({:.0f}% of the run) "
                        "for new worker processes",
                        again, again == 1 ? "" : "s", per_step ? ", about once per step" : "", wait_ms / 1e3,
                        100 * wait_ms / run_ms);
  f.gain = fmt::format("keeping the workers gives back {:.1f} s of the run: {}", gain_ms / 1e3,
                       gain_text(f.run_fraction));
  // How the workers start, as the agent recorded it for the loop's loaders: 'spawn' makes each
  // start a new interpreter; forked workers start from the loop's process as it is.
  std::string method;
  if (ev.agent)
    for (const auto& l : ev.agent->loaders)
      if (!l.start_method.empty() && (method.empty() || l.start_method == "spawn")) method = l.start_method;
  const char* spawn_text =
      method == "spawn"
          ? " Here they start by 'spawn' (the process's start method: the default inside torch.multiprocessing.spawn's "
            "processes), so each worker is a new interpreter that imports torch and unpickles the dataset."
      : method.empty() ? " Under the 'spawn' start method (the default inside torch.multiprocessing.spawn's processes, "
                         "and on macOS and Windows) each worker is a new interpreter that imports torch and unpickles "
                         "the dataset."
                       : "";
  f.explanation = fmt::format(
      "Each pass over a DataLoader with num_workers > 0 starts its worker processes, and the loop waits for them "
      "to start and load their first batches. Without persistent_workers=True the workers of a pass are shut down "
      "at its end, so every epoch starts new ones (PyTorch docs, torch.utils.data.DataLoader); a loader built anew "
      "each epoch, or a new iterator taken every step, starts them every time whatever its settings.{} This run "
      "started workers {} more time{} after each loader's first ({} new pass{} over the same loader, {} loader{} "
      "built again over the same dataset), and the loop waited {:.1f} s in them.",
      spawn_text, again, again == 1 ? "" : "s", restarts, restarts == 1 ? "" : "es", rebuilds,
      rebuilds == 1 ? "" : "s", wait_ms / 1e3);
  // Hugging Face Trainer builds the loaders: its knob keeps the training loader's workers and
  // caches the evaluation loaders it would build anew at every evaluation.
  const CodeSite* hf = config_site(ev, "transformers");
  if (per_step) {
    f.fix = "Take the loader's iterator once, outside the loop, and call next() on it; with persistent_workers=True "
            "a new pass (iter(loader)) reuses the running workers.";
    f.fix_code =
        "batches = iter(loader)  # once\n"
        "for step in range(steps):\n"
        "    x, y = next(batches)";
  } else if (hf) {
    f.fix = "Keep the workers: dataloader_persistent_workers=True in TrainingArguments (the Trainer then keeps its "
            "training loader's workers and reuses its evaluation loaders).";
    f.fix_code = knob_code(ev, *hf, {{"dataloader_num_workers", ""}, {"dataloader_persistent_workers", "True"}});
  } else if (rebuilds > 0) {
    f.fix = std::string("Build the DataLoader once, before the epoch loop, with persistent_workers=True, and iterate ") +
            "the same loader every epoch" + (restarts > 0 ? "; persistent_workers=True on the others." : ".");
    f.fix_code =
        "loader = DataLoader(dataset, batch_size=BS, num_workers=N, persistent_workers=True)  # once\n"
        "for epoch in range(epochs):\n"
        "    for x, y in loader:";
  } else {
    f.fix = "Keep the workers between passes: persistent_workers=True on the DataLoader. Without editing: trainscope "
            "run --set dataloader.persistent_workers=true.";
    f.fix_code = "loader = DataLoader(dataset, batch_size=BS, num_workers=N, persistent_workers=True)";
  }
  // A setting applied at run time keeps a loader's workers, never a loader built again.
  if (!per_step && rebuilds == 0) f.fix_settings = {{"dataloader.persistent_workers", "true"}};
  if (hf && !per_step)
    f.sites.push_back(site_ref(*hf, knob_note(*hf, {{{"dataloader_persistent_workers", "True"}}, ""})));
  for (size_t i = 0; i < lines.size() && i < 3; ++i) {
    const CodeSite& s = *lines[i].site;
    const std::string change = per_step || hf                ? ""
                               : s.rebuilds > 0 ? ": build it once, with persistent_workers=True"
                                                : ": persistent_workers=True here";
    f.sites.push_back(site_ref(s, fmt::format("workers started {} time{} ({} again), {:.1f} s of waiting for them{}",
                                              s.starts, s.starts == 1 ? "" : "s", lines[i].again,
                                              (s.restart_ms + s.rebuild_ms) / 1e3, change)));
  }
  return f;
}

}  // namespace ts::diagnose::rules
