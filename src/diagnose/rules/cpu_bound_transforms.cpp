// cpu-bound-transforms: the GPU waits for data and every usable CPU core is already busy, so
// more DataLoader workers cannot help: the preprocessing itself is too expensive (every
// core busy, ~100% x cores in top: the CPU is the bottleneck).
// Evidence: sampled CPU >= 85% of the usable cores, plus a data wait (agent or trace) >= 5% of
// the step (with workers, beyond the loop's hand-over of each batch) or a GPU mean below 80%; and,
// where the agent measured it, loading that computes (its CPU time >= kLoadingWaitsCpuShare of its
// wall time). Loading that waits on storage while other
// work (the ranks' compute, another job) fills the cores is dataloader-starvation's, and so is a
// CPU-only loop loading in its main process where workers beside fewer loop threads gain (rule.h
// fitted_loop_plan): its busy share is the loop's own threads as much as the loading. Cheaper
// samples loaded in workers give back at most their loading's CPU over the cores (samples_cpu_pct).
#include <algorithm>
#include <optional>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/loader_model.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

namespace {

// The loop's loader model where it loads in worker processes (nullopt: in the loop itself, or no
// model): the workers-cost-more premise and the hand-over below both read it.
bool loads_in_workers(const AgentEvidence* a) { return a && !a->loaders.empty() && a->loaders[0].num_workers > 0; }

std::optional<LoaderModelInput> workers_model(const Evidence& ev) {
  const AgentEvidence* a = agent_steps(ev);
  if (!loads_in_workers(a)) return std::nullopt;
  return agent_loader_model(ev, a->compute_ms > 0 ? a->compute_ms : a->step_ms);
}

double mean_step_ms(const AgentEvidence& a) { return a.step_mean_ms > 0 ? a.step_mean_ms : a.step_ms; }

// Workers that cost a CPU-only loop on saturated cores more than they save: it waits longer for
// their batch than loading the batch itself takes (each batch is handed over through shared
// memory, and the workers take cores from the model's intra-op threads), so cheaper samples are
// not the fix: loading in the loop is (num_workers=0). On cores the run keeps busy, the workers'
// CPU per batch (their loading and their hand-over) came out of the model's compute, and it comes
// back when they go, while the loop pays the loading itself:
//   step(0) = step - wait - (load x cpu_share + worker hand-over) + load
// karpathy/makemore on 2 cores, 4 workers, `verify` (2026-11-29): 21.76 ms steps waiting 1.51 ms
// for 1.35 ms batches, predicted 1.11x, measured 17.83 ms (1.22x); in an earlier verify the wait
// and the loading alone predicted 1.01x where 1.20x was measured. Claimed only where the wait alone
// exceeds the loading (a measured fact, whatever the model): workers_cost_more_measured.
bool workers_cost_more_measured(const Evidence& ev, const std::optional<LoaderModelInput>& in) {
  const AgentEvidence* a = agent_steps(ev);
  return a && in && cpu_only_run(ev) && in->load_ms > 0 &&
         a->data_wait_pct / 100 * mean_step_ms(*a) >= th::kWorkersCostMoreRatio * in->load_ms;
}

// Rewrites the finding as the workers-cost-more one (its premise measured).
void workers_cost_more(const Evidence& ev, const LoaderModelInput& in, Finding& f) {
  const AgentEvidence* a = agent_steps(ev);
  const double step = mean_step_ms(*a);
  const double wait = a->data_wait_pct / 100 * step;
  const int w = a->loaders[0].num_workers;
  const double share = in.cpu_share >= 0 ? std::min(1.0, in.cpu_share) : 1.0;
  const double workers_cpu = in.load_ms * share + worker_handover_ms(in);  // per batch, off the loop's cores
  const double predicted = std::max(in.load_ms, step - wait - workers_cpu + in.load_ms);
  f.recoverable_fraction = std::clamp(1 - predicted / step, 0.0, 0.95);
  f.severity = severity_for(f.recoverable_fraction);
  add(f, "num_workers", w, "count");
  add(f, "data_wait_ms", wait, "ms");
  add(f, "batch_load_ms", in.load_ms, "ms");
  add(f, "workers_cpu_ms", workers_cpu, "ms");
  add(f, "predicted_step_ms", predicted, "ms");
  f.title = fmt::format(
      "DataLoader workers cost this CPU-only loop more than they save: it waits {:.2f} ms per step for a batch it "
      "would load in {:.2f} ms",
      wait, in.load_ms);
  f.gain = fmt::format("num_workers=0: step {:.1f} -> {:.1f} ms ({:.2f} ms of wait and {:.2f} ms of the workers' CPU "
                       "out, the {:.2f} ms load in), {}",
                       step, predicted, wait, workers_cpu, in.load_ms, gain_text(f.recoverable_fraction));
  f.explanation = fmt::format(
      "On a CPU-only run whose cores are already busy, the {} worker process{} compete with the model's intra-op "
      "threads for the same cores, and every batch they load is handed over to the loop through shared memory (PyTorch "
      "torch.utils.data docs, \"Multi-process data loading\"). Here the loop waits {:.2f} ms per step for that, while "
      "loading a batch in the loop itself ({} samples x {:.3f} ms + collate) takes {:.2f} ms: the workers cost more than "
      "they save. And their CPU, {:.2f} ms per batch (loading and hand-over), came out of the model's compute on the "
      "busy cores: without them the model gets it back.",
      w, w == 1 ? "" : "es", wait, a->loaders[0].batch_size, a->sample_getitem_ms, in.load_ms, workers_cpu);
  f.fix = "Load in the training process: num_workers=0 (and no persistent_workers or prefetch_factor, which need "
          "workers).";
  f.fix_code = "loader = DataLoader(dataset, batch_size=BS, shuffle=True, num_workers=0)";
  f.fix_settings = {{"dataloader.num_workers", "0"}};
  point_at_fix(f, ev, "dataloader", "the loop's DataLoader: num_workers=0 here", KnobFix{{{"dataloader_num_workers", "0"}}, ""});
}

// The share of the step the loop waits beyond taking over its batch from a worker. With workers,
// each batch costs the loop its hand-over (unpickling the batch's handles, mapping its shared
// memory: loader_model.h) however far ahead the workers load, and the agent's data wait holds it:
// no cheaper sample removes it. corpus/epoch_workers: 1.1-1.5 ms waits on 13-15 ms steps whose
// workers kept ahead, taken for CPU-bound loading whenever other work filled the cores.
double wait_beyond_handover_pct(const AgentEvidence& a, const std::optional<LoaderModelInput>& in, double wait_pct) {
  const double handover = in ? handover_ms(*in) : th::kWorkerHandoverMs;
  return std::max(0.0, wait_pct - 100 * handover / mean_step_ms(a));
}

// What cheaper samples can give back with workers on saturated cores: at most the CPU their
// loading takes per batch, spread over the cores it shares with the rest of the job (a step
// bounded by the job's CPU over its cores sheds that much). The wait beyond the hand-over can be
// more, and then it is not the samples' cost: restarted workers reading their dataset's index
// again (corpus/epoch_workers: 0.9 ms of loading per 11.7 ms step on 2 cores, 3.8%, against a
// 5.8% wait beyond the hand-over) or another process's CPU. -1: not measured.
double samples_cpu_pct(const Evidence& ev, const AgentEvidence& a, const LoaderModelInput& in) {
  const double cores = usable_cores(ev);
  if (cores <= 0 || in.load_ms <= 0) return -1;
  return 100 * loading_cpu_ms(in) / (cores * mean_step_ms(a));
}

}  // namespace

std::optional<Finding> cpu_bound_transforms(const Evidence& ev) {
  if (!cpu_saturated(ev) || loading_waits(ev)) return std::nullopt;
  if (const auto plan = fitted_loop_plan(ev); plan && plan->speedup >= 1 + th::kLoaderNoGainMargin) return std::nullopt;
  // With workers: the whole wait where they cost more than they save (their hand-over is the
  // point there), else the wait beyond the hand-over. Loading in the loop (num_workers=0) has no
  // hand-over; the whole wait is the loading's.
  const auto in = workers_model(ev);
  const bool cost_more = workers_cost_more_measured(ev, in);
  const AgentEvidence* a = agent_steps(ev);
  const double whole = data_wait_pct(ev);  // the measured wait, all of it (-1 unknown)
  double wait = whole;
  double samples_pct = -1;
  if (loads_in_workers(a) && !cost_more && wait > 0) {
    wait = wait_beyond_handover_pct(*a, in, wait);
    if (in) samples_pct = samples_cpu_pct(ev, *a, *in);
    if (samples_pct >= 0) wait = std::min(wait, samples_pct);
  }
  // Loading in the loop: cheaper samples leave the batch's collate and the iterator's own time
  // (the wait beyond __getitem__ + collate) as they are. vae: 5.2 ms of wait in a 9.7 ms step, 0.63
  // ms of it kept; the whole wait predicted 2.2x, measured 1.65-1.75x (docs/BENCHMARKS.md, session 53).
  double kept_ms = -1;
  if (a && !loads_in_workers(a) && a->main_process_loading_ms > 0 && wait > 0 && mean_step_ms(*a) > 0) {
    kept_ms = std::max(0.0, a->collate_ms) + std::max(0.0, a->data_wait_ms - a->main_process_loading_ms);
    wait = std::max(0.0, wait - 100 * kept_ms / mean_step_ms(*a));
  }
  Util gpu = gpu_util(ev);
  double recoverable = 0;
  if (wait >= th::kDataWaitPct) {
    recoverable = wait / 100.0;
  } else if (wait < 0 && gpu.pct >= 0 && gpu.pct < th::kSawtoothGpuMeanPct) {
    recoverable = (th::kSawtoothGpuMeanPct - gpu.pct) / 100.0;
  } else {
    return std::nullopt;
  }
  Finding f = make("cpu-bound-transforms", Bottleneck::HostCpu, agent_steps(ev) ? "agent+samples" : "samples");
  double busy = cpu_busy_pct_of_budget(ev);
  add(f, "cpu_busy_pct", busy, "%");
  add(f, "cpu_cores", usable_cores(ev), "count");
  if (whole >= 0) {
    add(f, "data_wait_pct", whole, "%");
    if (loads_in_workers(a) && whole > wait)
      add(f, "wait_beyond_handover_pct", wait_beyond_handover_pct(*a, in, whole), "%");
    if (samples_pct >= 0) add(f, "loading_cpu_of_cores_pct", samples_pct, "%");
    if (kept_ms >= 0) add(f, "loading_kept_ms", kept_ms, "ms");
  }
  if (gpu.pct >= 0) add(f, "gpu_util_pct", gpu.pct, "%");
  if (ev.agent && ev.agent->sample_getitem_ms >= 0) add(f, "sample_cost_ms", ev.agent->sample_getitem_ms, "ms");
  if (loading_cpu_share(ev) >= 0) add(f, "loading_cpu_pct", 100 * loading_cpu_share(ev), "%");
  f.recoverable_fraction = std::clamp(recoverable, 0.0, 0.95);
  f.severity = severity_for(f.recoverable_fraction);
  f.confidence = wait >= 0 ? 0.85 : 0.6;
  const double waited = whole >= 0 ? whole : recoverable * 100;
  // Bounded by the loading's CPU (samples_cpu_pct): say so, or the gain reads as the whole wait.
  const std::string gives =
      samples_pct >= 0 && samples_pct <= wait
          ? fmt::format("its loading takes {:.0f}% of the cores' time, all that cheaper preprocessing can give back: {}",
                        samples_pct, gain_text(f.recoverable_fraction))
      : kept_ms > 0 ? fmt::format("cheaper preprocessing gives {}; the batch's collate and the loader's own "
                                  "iteration, {:.2f} ms a step, stay",
                                  gain_text(f.recoverable_fraction), kept_ms)
                    : fmt::format("cheaper preprocessing gives {}", gain_text(f.recoverable_fraction));
  // On a CPU-only run there is no GPU to starve: the loop waits, and the cores the loading needs
  // are the ones the model computes on, so the fix is cheaper samples, never a GPU.
  if (cpu_only_run(ev)) {
    f.title = fmt::format("CPU-bound data pipeline: the training loop waits for data {:.0f}% of the step, the CPU {:.0f}% busy",
                          waited, busy);
    f.gain = fmt::format("the loop waits {:.0f}% of the time: {}", waited, gives);
    f.explanation =
        "The training loop waits for each batch, and the CPU cores are already saturated: on a CPU-only "
        "run the loading and the model's computation share the same cores, so more DataLoader workers "
        "would take cores from the model. The per-sample preprocessing (decoding, converting, "
        "augmentations in Python) is the cost to cut.";
    f.fix =
        "Make each sample cheaper: precompute the deterministic transforms once (decode, convert and "
        "normalise the whole dataset into one tensor, then index it), batch them with __getitems__, or "
        "run on a host with more CPU cores.";
    f.fix_code =
        "# once, before training: the deterministic transforms of every sample, kept as tensors\n"
        "xs = torch.stack([x for x, _ in dataset]); ys = torch.tensor([y for _, y in dataset])\n"
        "loader = DataLoader(TensorDataset(xs, ys), batch_size=BS, shuffle=True)";
  } else {
    f.title = fmt::format("CPU-bound data pipeline: {:.0f}% of the CPU busy while the GPU waits", busy);
    f.gain = fmt::format("the GPU waits {:.0f}% of the time: {}", waited, gives);
    f.explanation =
        "The GPU is starved for data, but the CPU cores are already saturated: adding DataLoader "
        "workers would only make them fight over the same cores. The per-sample preprocessing "
        "(decoding, resizing, augmentations in Python) costs more CPU than this machine has for the "
        "rate the GPU consumes batches.";
    f.fix =
        "Make each sample cheaper: precompute and cache the deterministic transforms (decode/resize "
        "once, store tensors), move augmentations to the GPU (torchvision.transforms.v2 on CUDA "
        "tensors, DALI, Kornia), batch them with __getitems__, or run on a host with more CPU cores.";
    f.fix_code =
        "# transforms on the GPU, per batch instead of per sample on the CPU\n"
        "xb = xb.cuda(non_blocking=True)\n"
        "xb = gpu_augment(xb)  # e.g. torchvision.transforms.v2 / kornia on CUDA tensors";
  }
  if (cost_more) {
    workers_cost_more(ev, *in, f);
    return f;
  }
  const bool inline_loading = ev.agent && !ev.agent->loaders.empty() && ev.agent->loaders[0].num_workers == 0;
  point_at_fix(f, ev, "dataloader",
               inline_loading ? "the loop's DataLoader: its dataset's __getitem__ and transforms run in the loop's process"
                              : "the loop's DataLoader: its dataset's __getitem__ and transforms run in its workers",
               KnobFix{{{"dataloader_num_workers", ""}}, ""});
  return f;
}

}  // namespace ts::diagnose::rules
