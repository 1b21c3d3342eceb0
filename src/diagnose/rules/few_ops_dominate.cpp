// few-ops-dominate: a handful of kernels take most of the GPU time (the profiler's
// key_averages() sorted by cuda_time_total; check the tensor shapes going into those layers).
// Evidence: the trace's top-3 kernels >= 50% of all kernel time. Informational: it says where
// to look, not how much a change gives back.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> few_ops_dominate(const Evidence& ev) {
  if (!ev.trace || int(ev.trace->kernels.top.size()) < th::kFewOpsMinDistinct ||
      ev.trace->kernels.total_ns < th::kFewOpsMinKernelMs * 1e6)
    return std::nullopt;
  const auto& top = ev.trace->kernels.top;
  double top3 = 0;
  std::string names;
  for (size_t i = 0; i < top.size() && i < 3; ++i) {
    top3 += top[i].share_pct;
    std::string n = top[i].name.size() > 60 ? top[i].name.substr(0, 57) + "..." : top[i].name;
    names += fmt::format("{}{} ({:.0f}%)", i ? ", " : "", n, top[i].share_pct);
  }
  if (top3 < th::kFewOpsTop3Pct) return std::nullopt;
  Finding f = make("few-ops-dominate", Bottleneck::Compute, "trace");
  add(f, "top1_share_pct", top[0].share_pct, "%");
  add(f, "top3_share_pct", top3, "%");
  add(f, "top1_count", top[0].count, "count");
  add(f, "top1_total_ms", top[0].total_ns / 1e6, "ms");
  f.severity = Severity::Info;
  f.confidence = 0.9;
  f.recoverable_fraction = 0;
  f.title = fmt::format("A few kernels dominate: the top 3 take {:.0f}% of GPU kernel time", top3);
  f.gain = "where to look: any speed-up of these kernels is most of the GPU time";
  f.explanation = "GPU time is concentrated in " + names +
                  ". Speeding up anything else changes little; look at the layers that launch "
                  "these kernels and at the shapes going into them (record_shapes=True).";
  f.fix = "Check those layers' shapes and dtypes: pad to multiples of 8/64, use bf16 autocast, or "
          "use a fused implementation (F.scaled_dot_product_attention for attention).";
  f.fix_code =
      "prof = torch.profiler.profile(record_shapes=True, ...)\n"
      "print(prof.key_averages(group_by_input_shape=True).table(sort_by=\"cuda_time_total\", row_limit=10))";
  return f;
}

}  // namespace ts::diagnose::rules
