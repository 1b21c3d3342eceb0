// dataloader-starvation: the GPU waits for the next batch while CPU cores sit idle.
// Evidence, any of: the trace's DataLoader share of step time (TB plugin: > 5%); the agent's
// measured data wait; a sawtooth GPU utilisation in the samples. Silent when the CPU is
// saturated and the loading computes (or is not measured): then more workers cannot help and
// cpu-bound-transforms speaks instead. Loading that waits (its CPU time a small share of its wall
// time: storage, network) is helped by workers whatever the cores are doing, since they sleep.
// A CPU-only loop loading in the main process speaks whatever the saturation where the model, its
// threads fitted beside the workers, gains (rule.h fitted_loop_plan): the busy share there is the
// loop's own threads as much as the loading.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/loader_model.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> dataloader_starvation(const Evidence& ev) {
  if (cpu_saturated(ev) && !loading_waits(ev)) {
    const auto fitted = fitted_loop_plan(ev);
    if (!fitted || fitted->speedup < 1 + th::kLoaderNoGainMargin) return std::nullopt;
  }
  // This process's share of the job's usable cores (the number the threads section and
  // cpu-bound-transforms use, over the training processes that share it).
  int cores = cores_per_training_process(ev);
  const int procs_here = training_processes_here(ev);
  Finding f;
  double pct = -1;
  int workers = -1;
  std::string workers_how;
  int current_workers = -1;
  // The model's prediction for the recommended workers (loader_model.h); empty when unsized.
  std::optional<LoaderPlan> plan;
  LoaderModelInput model;
  // The steady state when the measured steps drew on prefetched batches: the model's step with
  // the current workers (-1: the measured steps are the steady state), and the note that says so.
  double steady_ms = -1;
  std::string steady_note, stall_note;
  double stalled_fast_ms = -1;  // the loop's compute without stalls, when its steps stalled
  // On a CPU-only run there is no GPU to starve: the training loop itself waits, and the step
  // that consumes the batches is the CPU's (its evidence and text say so; the id stays).
  bool no_gpu = cpu_only_run(ev);

  if (const auto* a = agent_steps(ev)) {
    // DDP ranks step in lockstep: the rank whose loader is slowest paces the job, and the others
    // wait for it inside the collective with their own batches ready (their data wait near zero).
    // The job waits for data as much as its most-waiting rank, whichever rank reports.
    double wait_pct = a->data_wait_pct;
    int waiting_rank = -1;
    if (ev.ranks && ev.ranks->source == "agent")
      for (const auto& r : ev.ranks->ranks)
        if (r.step_ms > 0 && 100 * r.data_wait_ms / r.step_ms > wait_pct)
          wait_pct = 100 * r.data_wait_ms / r.step_ms, waiting_rank = r.rank;
    if (wait_pct < th::kDataWaitPct) return std::nullopt;
    f = make("dataloader-starvation", Bottleneck::DataPipeline, "agent");
    pct = wait_pct;
    if (waiting_rank >= 0) add(f, "waiting_rank", waiting_rank, "count");
    // One statistic: the wait's share is of the mean step, so its ms are of the mean step too.
    const double now_ms = a->step_mean_ms > 0 ? a->step_mean_ms : a->step_ms;
    add(f, "data_wait_pct", pct, "%");
    add(f, "data_wait_ms", pct / 100 * now_ms, "ms");
    add(f, "step_ms", now_ms, "ms");
    if (!a->loaders.empty()) {
      current_workers = a->loaders[0].num_workers;
      if (current_workers >= 0) add(f, "num_workers", current_workers, "count");
    }
    double gpu_step = a->gpu_ms > 0 ? a->gpu_ms : (a->compute_ms > 0 ? a->compute_ms : a->step_ms - a->data_wait_ms);
    // gpu_step_ms only when CUDA events measured it; otherwise it is the loop's compute time.
    bool measured_on_gpu = a->gpu_ms > 0;
    // The loop's compute when fed. After a long data wait the intra-op thread pool has gone to
    // sleep, and the step's first operator waits for it to wake (evidence.h compute_low_ms), the
    // longer when other work holds the cores. A fed loop does not idle that long, so those stalls
    // go with the wait: the model sizes the loop from the steps that did not stall, and the fix's
    // bound is everything in the mean step but that compute. Stalled: the 10th percentile of the
    // steps' compute under half its median (most steps stall), or the median under half of the
    // mean step's non-waiting part (some steps stall long). Not when the job's own threads were
    // measured queueing for the cores (oversubscribed): then the slow steps waited for a core, and
    // a fed loop would wait the same.
    const bool queued = ev.samples && ev.samples->threads_oversubscribed;
    if (!measured_on_gpu && a->compute_ms > 0 && !queued) {
      const bool low_stall = a->compute_low_ms > 0 && a->compute_low_ms < th::kComputeStallRatio * a->compute_ms;
      const double fast = low_stall ? a->compute_low_ms : a->compute_ms;
      const double mean_rest = now_ms - pct / 100 * now_ms;  // the mean step's non-waiting part
      if (low_stall || fast < th::kComputeStallRatio * mean_rest) {
        add(f, "compute_median_ms", a->compute_ms, "ms");
        add(f, "mean_step_less_wait_ms", mean_rest, "ms");
        stall_note = fmt::format(
            " The loop's compute stalls after the wait: the mean step less its wait is {:.1f} ms, the median step's "
            "compute {:.2f} ms and a tenth of the steps computed in {:.2f} ms or less. After a long data wait the "
            "intra-op thread pool has gone to sleep and the first operator waits for it to wake (OpenMP threads spin "
            "briefly, then sleep: GOMP_SPINCOUNT, OMP_WAIT_POLICY), the longer when other work holds the cores; a fed "
            "loop does not idle that long, so the model takes {:.2f} ms.",
            mean_rest, a->compute_ms, a->compute_low_ms, fast);
        gpu_step = fast;
        stalled_fast_ms = fast;
      }
    }
    const char* step_name = measured_on_gpu ? "gpu_step_ms" : (no_gpu ? "cpu_step_ms" : "compute_step_ms");
    const char* consumer = measured_on_gpu ? "the GPU needs" : (no_gpu ? "the model computes on the CPU for" : "the model computes for");
    int64_t bs = a->loaders.empty() ? -1 : a->loaders[0].batch_size;
    if (auto in = agent_loader_model(ev, gpu_step)) {
      model = *in;
      const double per_batch = model.load_ms;
      add(f, "sample_cost_ms", a->sample_getitem_ms, "ms");
      add(f, "batch_load_ms", per_batch, "ms");
      add(f, step_name, gpu_step, "ms");
      if (model.other_cores >= th::kOtherWorkCoresShown) add(f, "other_work_cores", model.other_cores, "cores");
      if (model.batch_mib > 0) add(f, "batch_mib", model.batch_mib, "MiB");
      if (model.worker_ms_per_mib > 0) add(f, "shm_fault_ms_per_mib", model.worker_ms_per_mib, "ms");
      // A prefetch queue draining: the current workers cannot deliver a batch as often as the
      // measured steps took one, so those steps drew on the num_workers x prefetch_factor batches
      // loaded during start-up, and the run ended before the steady state. The model's step with
      // the current workers stands for the steady state, and the gain is against it.
      if (current_workers >= 1) {
        const double steady = predicted_step_ms(model, current_workers);
        if (steady > now_ms * th::kLoaderDrainingRatio) {
          const int pf = a->loaders[0].prefetch_factor > 0 ? a->loaders[0].prefetch_factor : 2;
          steady_ms = steady;
          model.step_ms = steady;
          add(f, "steady_step_ms", steady, "ms");
          add(f, "prefetched_batches", current_workers * pf, "count");
          steady_note = fmt::format(
              " Steady state: the measured steps averaged {:.1f} ms, but {} worker{} loading {:.1f} ms batches deliver "
              "one every {:.1f} ms at best, so those steps drew on the {} batches prefetched during start-up "
              "(num_workers x prefetch_factor) and the run ended before the queue ran dry ({} steps measured: too short "
              "to reach the steady state; run more steps to measure it). The model's steady step is {:.1f} ms; the gain "
              "is against it.",
              now_ms, current_workers, current_workers == 1 ? "" : "s", per_batch, per_batch / current_workers,
              current_workers * pf, a->steps, steady);
        }
      }
      plan = plan_workers(model);
      workers = plan->workers;
      if (a->loading_cpu_share >= 0) add(f, "loading_cpu_pct", 100 * a->loading_cpu_share, "%");
      std::string kind =
          a->loading_cpu_share < 0 ? "loading is taken as computing (its CPU time was not measured)"
          : plan->waits ? fmt::format("loading waits (its CPU time is {:.0f}% of its wall time: storage, network or "
                                      "sleep), so workers mostly sleep and more of them than the cores help",
                                      100 * a->loading_cpu_share)
                        : fmt::format("loading computes (its CPU time is {:.0f}% of its wall time), so workers "
                                      "cannot use more cores than the main process leaves",
                                      100 * a->loading_cpu_share);
      // Where the cores bound the fed loop above its compute (loader_model.h, the CPU bound), the
      // workers need only keep up with that step.
      const double cpu_bound = cpu_bound_step_ms(model, 0);
      const double fed_ms = std::max(gpu_step, cpu_bound);
      // With every rank's CPU counted (loader_model.h, loop_cpu_ms), the text says whose it is.
      const std::string whose =
          loops_in_cpu_bound(model) > 1
              ? fmt::format("each of the {} ranks on this host: {:.1f} ms of its process's CPU clock, its", model.loops,
                            model.loop_cpu_ms)
              : "the loop,";
      const std::string bound_text =
          cpu_bound > gpu_step
              ? fmt::format(", but the cores bound the fed loop at {:.1f} ms a step (the CPU per step of {} "
                            "hand-overs and its workers over the {:.1f} cores left to the job)",
                            cpu_bound, whose, cores_left(model, 0))
              : std::string();
      workers_how = fmt::format(
          "one batch takes {:.1f} ms to load ({} samples x {:.2f} ms + collate) and {} {:.1f} ms per step{}, so "
          "ceil({:.1f} / {:.1f}) + 1 = {} workers would keep it fed; {}{}",
          per_batch, bs, a->sample_getitem_ms, consumer, gpu_step, bound_text, per_batch, fed_ms,
          static_cast<int>(std::ceil(per_batch / fed_ms)) + 1, kind,
          plan->cap_reason.empty() ? "" : " (" + plan->cap_reason + ")");
      if (plan->loop_threads > 0)
        workers_how += fmt::format(
            ". Each computing worker also takes a core from the loop's {} intra-op threads, and oversubscribed "
            "they wait for each other at every parallel region, so the fix gives the loop {} thread{} beside {} "
            "worker{} (torch.set_num_threads({})), and its compute grows to at most {:.1f} ms ({:.1f} ms x {} / {})",
            model.loop_threads, plan->loop_threads, plan->loop_threads == 1 ? "" : "s", plan->workers,
            plan->workers == 1 ? "" : "s", plan->loop_threads, compute_with_ms(model, plan->workers), model.compute_ms,
            model.loop_threads, plan->loop_threads);
    }
  } else if (const auto* t = trace_with_steps(ev)) {
    pct = t->steps.pct(t->steps.total.dataloader);
    if (pct < th::kDataloaderPct) return std::nullopt;
    f = make("dataloader-starvation", Bottleneck::DataPipeline, "trace");
    size_t n = std::max<size_t>(1, t->steps.steps.size());
    // Exposed DataLoader time (nothing else ran) is what a fix gives back at most; the host time
    // inside the DataLoader calls, when known, is what one batch costs to load.
    double dl_ms = t->steps.total.dataloader / 1e6 / n;
    double step_ms = t->steps.total_ns / 1e6 / n;
    add(f, "dataloader_pct", pct, "%");
    add(f, "dataloader_ms_per_step", dl_ms, "ms");
    if (t->steps.dataloader_host_ns > 0) {
      add(f, "dataloader_host_pct", t->steps.pct(t->steps.dataloader_host_ns), "%");
      dl_ms = std::max(dl_ms, t->steps.dataloader_host_ns / 1e6 / n);
    }
    add(f, "step_ms", step_ms, "ms");
    if (t->gpu.present) add(f, "gpu_idle_pct", t->gpu.idle_pct, "%");
    // In a single-process loader the DataLoader time is the whole cost of a batch and the rest
    // of the step is the model's: that ratio sizes the worker pool. A trace cannot tell waiting
    // from computing, so the loading is taken as computing (capped at the cores).
    model = {step_ms, step_ms - dl_ms, dl_ms, -1, cores, 0};
    plan = plan_workers(model);
    workers = plan->workers;
    if (workers > 0)
      workers_how = fmt::format(
          "if this run loaded in the main process (num_workers=0), a batch costs {:.1f} ms and the "
          "rest of the step {:.1f} ms, so ceil({:.1f} / {:.1f}) + 1 = {} workers hide the loading{}",
          dl_ms, step_ms - dl_ms, dl_ms, step_ms - dl_ms, static_cast<int>(std::ceil(dl_ms / (step_ms - dl_ms))) + 1,
          plan->cap_reason.empty() ? "" : " (" + plan->cap_reason + ")");
  } else if (ev.samples && ev.samples->nvml && ev.samples->gpu_pattern == "sawtooth" &&
             ev.samples->gpu_util_mean_pct >= 0 && ev.samples->gpu_util_mean_pct < th::kSawtoothGpuMeanPct) {
    f = make("dataloader-starvation", Bottleneck::DataPipeline, "samples");
    const auto& s = *ev.samples;
    pct = std::max(0.0, 100.0 - s.sawtooth_duty_pct);
    add(f, "gpu_util_mean_pct", s.gpu_util_mean_pct, "%");
    add(f, "sawtooth_period_ms", s.sawtooth_period_ms, "ms");
    add(f, "sawtooth_duty_pct", s.sawtooth_duty_pct, "%");
    f.confidence = 0.5;  // the pattern alone cannot tell a data wait from any other host stall
  } else {
    return std::nullopt;
  }
  if (ev.loader && ev.loader->recommended_workers > 0) {
    workers = ev.loader->recommended_workers;
    workers_how = fmt::format("the DataLoader sweep measured {} workers as the smallest that keeps up", workers);
    if (plan && model.load_ms > 0) set_workers(model, *plan, workers);
  }
  if (double busy = cpu_busy_pct_of_budget(ev); busy >= 0) add(f, "cpu_busy_pct", busy, "%");
  if (workers > 0) add(f, "recommended_num_workers", workers, "count");

  // The gain is the recommended fix's: the model's step with those workers, never more than
  // removing the whole wait. Without a sized fix (samples only) it is the whole wait, "up to".
  double whole = std::clamp(pct / 100.0, 0.0, 0.95);
  // Against the steady state the wait is what the consumer does not cover of the model's step.
  if (steady_ms > 0) whole = std::clamp(1 - model.compute_ms / steady_ms, 0.0, 0.95);
  // The stalls after each wait go with it: the bound is the whole step but the fed loop's compute.
  if (stalled_fast_ms > 0 && model.step_ms > 0)
    whole = std::max(whole, std::clamp(1 - stalled_fast_ms / model.step_ms, 0.0, 0.95));
  f.recoverable_fraction = whole;
  if (plan && plan->predicted_step_ms > 0) {
    add(f, "predicted_step_ms", plan->predicted_step_ms, "ms");
    f.recoverable_fraction = std::clamp(1 - plan->predicted_step_ms / model.step_ms, 0.0, whole);
  }
  // A predicted gain under the margin is no gain (the fix cannot be told from noise): a note only.
  // So is recommending the workers the loop already has (a measured step above the model's is then
  // noise or the loop itself, not something more workers fix); a draining queue is the exception:
  // its gain is against the steady state the run did not reach.
  const bool has_them = plan && plan->workers > 0 && current_workers >= plan->workers && steady_ms < 0;
  const bool no_gain =
      plan && plan->predicted_step_ms > 0 && (has_them || speedup(f.recoverable_fraction) < 1 + th::kLoaderNoGainMargin);
  const double sized_fraction = f.recoverable_fraction;
  if (no_gain) f.recoverable_fraction = 0;
  f.severity = severity_for(f.recoverable_fraction);
  if (f.source != "samples") f.confidence = 0.9;
  f.title = fmt::format("{} waiting for data: loading takes {:.0f}% of each step",
                        no_gpu ? "Training loop" : "GPU", pct);
  // The loop's threads the fix sets beside the workers (0: left as they are).
  const int fit_threads = plan && workers > 0 ? plan->loop_threads : 0;
  const std::string threads_text = fit_threads > 0 ? fmt::format(" with torch.set_num_threads({})", fit_threads) : "";
  if (plan && plan->predicted_step_ms > 0) {
    double x = speedup(sized_fraction);
    // Where the model's step beats removing the whole measured wait, the gain is that bound, and
    // the text says so: its parts add up to the model's step, not to the bounded one.
    const bool bounded = plan->predicted_step_ms < model.step_ms / x - 0.05;
    const double cpu_bound = cpu_bound_step_ms(model, workers);
    const bool cpu_sets_it = cpu_bound > 0 && cpu_bound >= plan->predicted_step_ms - 1e-9 &&
                             cpu_bound > std::max(plan->period_ms, model.compute_ms + handover_ms(model));
    f.gain = fmt::format("num_workers={}{} gives about {:.1f}x (step {:.1f} -> {:.1f} ms{}: a batch every {:.1f} ms, "
                         "compute {:.1f} ms, hand-over {:.1f} ms{})",
                         workers, threads_text, x, model.step_ms, model.step_ms / x,
                         bounded ? fmt::format(", no more than removing the whole measured wait; the model's step is "
                                               "{:.1f} ms",
                                               plan->predicted_step_ms)
                                 : std::string(),
                         plan->period_ms > 0 ? plan->period_ms : model.load_ms / workers,
                         compute_with_ms(model, workers), handover_ms(model),
                         cpu_sets_it ? fmt::format("; the job's CPU per step over the {:.1f} cores it gets beside "
                                                   "other work sets the step: {:.1f} ms",
                                                   cores_left(model, workers), cpu_bound)
                         : pin_ms(model) > 0 && pin_ms(model) >= plan->period_ms - 1e-9
                             ? fmt::format("; the pin-memory thread copies each {:.0f} MiB batch in {:.1f} ms, which "
                                           "sets the period",
                                           model.batch_mib, pin_ms(model))
                             : std::string());
    if (has_them)
      f.gain = fmt::format("num_workers={} is what the loop has: the model's step with them is {:.1f} ms against {:.1f} ms "
                           "measured; more workers cannot help",
                           current_workers, plan->predicted_step_ms, model.step_ms);
    else if (x < 1 + th::kLoaderNoGainMargin)
      f.gain += fmt::format("; more workers cannot help: {}", model.cpu_share >= th::kLoadingWaitsCpuShare || model.cpu_share < 0
                                                                  ? "the loading itself computes on the cores there are: make it cheaper (cache, vectorise, move augmentation to the GPU)"
                                                                  : "the loop's own compute is the step");
  } else {
    f.gain = fmt::format("data wait is {:.0f}% of the step: hiding it entirely gives {}", pct,
                         gain_text(f.recoverable_fraction));
  }
  // Why workers can run beside the loop: free cores; loading that sleeps and needs none; or, where
  // the rule speaks on busy cores for loading that computes (a CPU-only loop loading inline,
  // fitted_loop_plan), cores the loop's own threads give up.
  const char* room = !cpu_saturated(ev) ? "The CPU is not saturated, so"
                     : loading_waits(ev) ? "The cores are busy, but the loading mostly waits rather than computes, so"
                                         : "The cores are busy with the loop's own intra-op threads as much as with the "
                                           "loading, so with fewer of those threads";
  f.explanation = fmt::format(
      "The training loop spends this share of every step waiting for the DataLoader to hand over the next batch, and "
      "{}. {} the loading can run in parallel worker processes that prepare the next batches while {} computes the "
      "current one (PyTorch torch.utils.data docs, \"Multi-process data loading\").",
      no_gpu ? "the model's computation waits with it" : "the GPU has nothing to do meanwhile", room,
      no_gpu ? "the main process" : "the GPU");
  if (!workers_how.empty()) f.explanation += " Sizing: " + workers_how + ".";
  f.explanation += stall_note;
  f.explanation += steady_note;
  // Workers that start by 'spawn' (the process's start method: the default inside
  // torch.multiprocessing.spawn's processes, and on macOS and Windows) are new interpreters: each
  // imports torch and re-runs the script's imports before its first batch, about the start-up's
  // import time of CPU (measured: 1.0-1.5 CPU-s per worker of the corpus's spawn_ddp ranks, against
  // forked workers that start at once; docs/BENCHMARKS.md, session 38).
  const bool spawned = workers > 0 && !has_them && ev.agent && !ev.agent->loaders.empty() &&
                       ev.agent->loaders[0].start_method == "spawn";
  const double import_s = ev.agent && ev.agent->time_account ? ev.agent->time_account->startup_import_s : -1;
  std::string spawn_fix;
  if (spawned) {
    if (import_s > 0) add(f, "worker_import_s", import_s, "s");
    const std::string cost =
        import_s > 0 ? fmt::format(" (this run's imports took {:.1f} s: about {:.0f} s of CPU for {} workers)",
                                   import_s, import_s * workers, workers)
                     : std::string();
    f.explanation += fmt::format(
        " Its workers start by 'spawn' here (this process's multiprocessing start method: the default inside "
        "torch.multiprocessing.spawn's processes), so each is a new interpreter that imports torch and re-runs the "
        "script's imports before its first batch{}; with persistent_workers=True that happens once, not every epoch "
        "(PyTorch docs, torch.utils.data, \"Platform-specific behaviors\").",
        cost);
    spawn_fix = "; the workers start by 'spawn' here, each importing torch anew, so keep them persistent";
  }
  std::string n = workers > 0 ? std::to_string(workers) : "8";
  // An IterableDataset has no sampler (no shuffle=), and workers split its stream only as its own
  // __iter__ does: one that never asks get_worker_info() yields the whole stream in every worker,
  // so num_workers=N alone would repeat every sample N times (PyTorch docs,
  // torch.utils.data.IterableDataset).
  const bool stream = ev.agent && !ev.agent->loaders.empty() && ev.agent->loaders[0].iterable;
  const bool unsplit = ev.agent && ev.agent->unsplit_stream();
  const char* shuffle = stream ? "" : " shuffle=True,";
  if (unsplit)
    f.explanation += fmt::format(
        " The loader reads an IterableDataset whose __iter__ never asks torch.utils.data.get_worker_info(): "
        "each worker would yield the whole stream, and num_workers={0} alone would train on every sample {0} "
        "times. Split the stream by worker first (PyTorch docs, torch.utils.data.IterableDataset); that is a "
        "code change, so no --set applies it.",
        n);
  // Pinned memory and non_blocking copies only matter when batches go to a GPU.
  f.fix = fmt::format("{}oad in parallel: num_workers={}{}, persistent_workers=True (no respawn each epoch){}{}{}.",
                      unsplit ? "Split the stream across workers in the dataset's __iter__ (each worker takes every "
                                "num_workers-th record from get_worker_info().id), then l"
                              : "L",
                      n,
                      workers > 0 ? "" : " (start at physical cores / 2 and sweep)",
                      no_gpu ? "" : ", pin_memory=True with .cuda(non_blocking=True)",
                      fit_threads > 0 ? fmt::format("; and torch.set_num_threads({}) so that the loop's threads and the "
                                                    "workers fit the {} core{}{}",
                                                    fit_threads, cores, cores == 1 ? "" : "s",
                                                    procs_here > 1 ? fmt::format(" this process gets of the {:.0f} its {} "
                                                                                 "training processes share",
                                                                                 usable_cores(ev), procs_here)
                                                                   : "")
                                      : "",
                      spawn_fix);
  f.fix_code = no_gpu ? fmt::format(
                            "{}loader = DataLoader(dataset, batch_size=BS,{}\n"
                            "                    num_workers={}, persistent_workers=True)",
                            fit_threads > 0 ? fmt::format("torch.set_num_threads({})  # the loop's threads beside the workers\n",
                                                          fit_threads)
                                            : "",
                            shuffle, n)
                      : fmt::format(
                            "loader = DataLoader(dataset, batch_size=BS,{}\n"
                            "                    num_workers={}, persistent_workers=True, pin_memory=True)\n"
                            "xb = xb.cuda(non_blocking=True)",
                            shuffle, n);
  if (unsplit)
    f.fix_code = "# in the dataset's __iter__: each worker its own share of the stream\n"
                 "info = torch.utils.data.get_worker_info()\n"
                 "shard, shards = (info.id, info.num_workers) if info else (0, 1)\n"
                 "for i, record in enumerate(records):\n"
                 "    if i % shards == shard:\n"
                 "        yield record\n" +
                 f.fix_code;
  // Under Hugging Face Trainer the Trainer builds the DataLoader: the fix is its TrainingArguments'
  // settings, at the user's line or on their command line (HfArgumentParser).
  Knobs trainer_knobs = {{"dataloader_num_workers", n}, {"dataloader_persistent_workers", "True"}};
  if (!no_gpu) trainer_knobs.push_back({"dataloader_pin_memory", "True"});
  if (const CodeSite* hf = config_site(ev, "transformers"); hf && !unsplit) f.fix_code = knob_code(ev, *hf, trainer_knobs);
  if (no_gain) {
    // A note: no code to paste, and the line named as it is. The sized setting stays in
    // fix_settings so that `trainscope verify` can measure the claim that it cannot help.
    f.fix = has_them ? fmt::format("Keep num_workers={}: more workers cannot help here.", current_workers)
                     : std::string("Leave the DataLoader's workers as they are: more of them cannot help here (the gain "
                                   "above says what sets the step).");
    f.fix_code.clear();
  }
  // What `trainscope verify` applies at run time: the sized fix only (an unsized one is a sweep).
  if (workers > 0 && !has_them && !unsplit) {
    f.fix_settings = {{"dataloader.num_workers", n}, {"dataloader.persistent_workers", "true"}};
    if (!no_gpu) f.fix_settings.insert(f.fix_settings.end(), {{"dataloader.pin_memory", "true"}, {"copy.non_blocking", "true"}});
    if (fit_threads > 0) f.fix_settings.push_back({"threads", std::to_string(fit_threads)});
  }
  point_at_fix(f, ev, "dataloader",
               no_gain   ? std::string("the loop's DataLoader: no change")
               : unsplit ? fmt::format("the loop's DataLoader: split its stream by worker, then num_workers={} here", n)
                         : fmt::format("the loop's DataLoader: num_workers={} here{}", n, threads_text),
               no_gain ? KnobFix{{}, "no change to dataloader_num_workers"} : KnobFix{trainer_knobs, ""});
  return f;
}

}  // namespace ts::diagnose::rules
