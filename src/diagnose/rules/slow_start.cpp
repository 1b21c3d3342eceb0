// slow-start: the time before the first training step is a large share of the run, and most of it
// is the user's own code (data preparation, tokenising, model loading), not the libraries loading.
// Evidence: the run's time account (before_first_step_s) and the start-up's sampling profile
// (agent startup.py): its import share and its top user lines. Fires when the start-up is >=
// kSlowStartRunPct of the run and its user-code part (start-up less imports) >= kSlowStartMinS.
// Gain, on the run's scale: the top line's share of the start-up, which caching its result
// (tokenised data saved once and memory-mapped, a prepared dataset loaded from disk) takes off
// every later run; "up to": a cache still reads something back.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> slow_start(const Evidence& ev) {
  if (!ev.agent || !ev.agent->time_account) return std::nullopt;
  const TimeAccount& t = *ev.agent->time_account;
  if (t.job_s() <= 0 || t.startup_samples <= 0 || t.startup_import_s < 0) return std::nullopt;
  const double pct = 100 * t.before_first_step_s / t.job_s();
  const double user_s = std::max(0.0, t.before_first_step_s - t.startup_import_s);
  if (pct < th::kSlowStartRunPct || user_s < th::kSlowStartMinS) return std::nullopt;
  std::vector<const CodeSite*> lines;
  for (const auto& s : ev.agent->sites)
    if (s.role == "startup") lines.push_back(&s);
  if (lines.empty()) return std::nullopt;  // nothing of the user's to point at: the time is elsewhere
  std::sort(lines.begin(), lines.end(), [](const CodeSite* a, const CodeSite* b) { return a->host_ms > b->host_ms; });
  const double top_s = lines.front()->host_ms / 1e3;
  Finding f = make("slow-start", Bottleneck::Config, "agent");
  f.outside_step = true;
  add(f, "before_first_step_s", t.before_first_step_s, "s");
  add(f, "before_first_step_pct_of_run", pct, "%");
  add(f, "imports_s", t.startup_import_s, "s");
  add(f, "top_line_s", top_s, "s");
  add(f, "startup_samples", t.startup_samples, "count");
  add(f, "run_s", t.job_s(), "s");
  f.run_fraction = std::clamp(top_s / t.job_s(), 0.0, 0.95);
  f.recoverable_fraction = f.run_fraction;
  f.severity = severity_for(f.run_fraction);
  f.confidence = 0.8;
  f.title = fmt::format("The first step starts after {:.1f} s ({:.0f}% of the run); {:.1f} s of it in one line of "
                        "start-up code",
                        t.before_first_step_s, pct, top_s);
  f.gain = fmt::format("caching what {}:{} computes gives back up to {:.1f} s of every run like this one: the run {}",
                       lines.front()->path, lines.front()->line, top_s, gain_text(f.run_fraction));
  f.explanation = fmt::format(
      "Before the first training step the process ran for {:.1f} s: {:.1f} s loading libraries (imports) and {:.1f} "
      "s in the script's own start-up code, by a time-weighted sampling profile of the main thread every 10 ms ({} samples). Every "
      "run pays it again, and during it the accelerator is idle.",
      t.before_first_step_s, t.startup_import_s, user_s, t.startup_samples);
  f.fix =
      "Do the preparation once and load its result: save tokenised or decoded data as arrays and memory-map them "
      "(numpy.memmap, as nanoGPT's prepare.py does), save a processed Hugging Face dataset (save_to_disk / "
      "load_from_disk, or rely on its map() cache), load weights with safetensors; or prepare in a separate step "
      "before the training job.";
  f.fix_code =
      "# once: np.save(\"train_tokens.npy\", tokens)\n"
      "tokens = np.load(\"train_tokens.npy\", mmap_mode=\"r\")";
  for (size_t i = 0; i < lines.size() && i < 3 && lines[i]->host_ms >= 0.05e3 * t.before_first_step_s; ++i)
    f.sites.push_back(site_ref(*lines[i], fmt::format("{:.1f} s of the start-up ({:.0f}%)", lines[i]->host_ms / 1e3,
                                                      100 * lines[i]->host_ms / 1e3 / t.before_first_step_s)));
  return f;
}

}  // namespace ts::diagnose::rules
