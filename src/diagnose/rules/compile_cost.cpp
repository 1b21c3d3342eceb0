// compile-cost: torch.compile's compilation costs more of this run than it can save in it.
// Evidence: the run's time account: compile_s (Dynamo's own timings, agent phases.py) >=
// kCompileRunPct of the run, and more than kCompileTypicalGain x the training steps' time: at the
// speed-up PyTorch reports for torch.compile in training (43% faster on an A100 across 163
// open-source models, pytorch.org/get-started/pytorch-2.0), the steps of this run save less
// than the compilation took.
// Gain, on the run's scale: up to the whole compilation (a warm cache on the next run, or no
// compilation for a run this short); what the compiled steps save is not measured here.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> compile_cost(const Evidence& ev) {
  if (!ev.agent || !ev.agent->time_account) return std::nullopt;
  const TimeAccount& t = *ev.agent->time_account;
  if (t.job_s() <= 0 || t.compile_s <= 0) return std::nullopt;
  const double pct = 100 * t.compile_s / t.job_s();
  const double saves_at_most = th::kCompileTypicalGain * t.train_steps_s;
  if (pct < th::kCompileRunPct || t.compile_s <= saves_at_most) return std::nullopt;
  Finding f = make("compile-cost", Bottleneck::Config, "agent");
  f.outside_step = true;
  add(f, "compile_s", t.compile_s, "s");
  add(f, "compile_pct_of_run", pct, "%");
  add(f, "compiled_frames", t.compile_frames, "count");
  add(f, "train_steps_s", t.train_steps_s, "s");
  add(f, "typical_saving_s", saves_at_most, "s");
  add(f, "run_s", t.job_s(), "s");
  // Steps the run would need for the compilation to pay for itself at that speed-up.
  const double step_s = t.steady_step_s > 0 ? t.steady_step_s : (t.steps > 0 ? t.train_steps_s / t.steps : -1);
  const double breakeven = step_s > 0 ? t.compile_s / (th::kCompileTypicalGain * step_s) : -1;
  if (breakeven > 0) add(f, "breakeven_steps", breakeven, "count");
  f.run_fraction = std::clamp(t.compile_s / t.job_s(), 0.0, 0.95);
  f.recoverable_fraction = f.run_fraction;
  f.severity = severity_for(f.run_fraction);
  f.confidence = 0.8;
  f.title = fmt::format("Compilation takes {:.0f}% of the run ({:.1f} s, {} compiled frame{}), more than its steps can "
                        "win back",
                        pct, t.compile_s, t.compile_frames, t.compile_frames == 1 ? "" : "s");
  f.gain = fmt::format("up to {:.1f} s of the {:.1f} s run (the run {}): a warm compile cache on the next run, or no "
                       "compilation for a run this short",
                       t.compile_s, t.job_s(), gain_text(f.run_fraction));
  f.explanation = fmt::format(
      "torch.compile traced and compiled for {:.1f} s; the training steps took {:.1f} s. Even at the speed-up PyTorch "
      "reports for compiled training (43% faster on an A100 across 163 models), these steps save about {:.1f} s{}. "
      "Compilation is paid again by every new process unless its results are cached.",
      t.compile_s, t.train_steps_s, saves_at_most,
      breakeven > 0 ? fmt::format("; the compilation pays for itself after about {:.0f} steps", breakeven) : "");
  if (t.compile_frames >= 3)
    f.explanation += fmt::format(" {} frames were compiled: recompilations (TORCH_LOGS=recompiles prints Dynamo's reasons; "
                                 "mark_dynamic or dynamic=True for shapes that change).",
                                 t.compile_frames);
  f.fix =
      "Keep the compiled artefacts between runs: Inductor's FX graph cache and AOTAutograd cache "
      "(TORCHINDUCTOR_FX_GRAPH_CACHE=1, TORCHINDUCTOR_AUTOGRAD_CACHE=1; on by default in recent releases, in "
      "TORCHINDUCTOR_CACHE_DIR), or torch.compiler.save_cache_artifacts()/load_cache_artifacts() to carry them to "
      "another machine; for short runs (debugging, smoke tests) run eagerly.";
  f.fix_code =
      "# keep the caches on a persistent disk:\nexport TORCHINDUCTOR_CACHE_DIR=/persistent/inductor-cache\n"
      "# or, for a short run: model = torch.compile(model) only when args.compile";
  if (const CodeSite* cfg = config_site(ev, "transformers"))
    f.sites.push_back(site_ref(*cfg, knob_note(*cfg, {{{"torch_compile", "False"}}, "for short runs (or keep the cache)"})));
  return f;
}

}  // namespace ts::diagnose::rules
