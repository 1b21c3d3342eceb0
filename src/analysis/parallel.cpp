// Optimizer, data parallelism, torch.compile and communication (docs/ANALYSES.md).
// Inside the analysis window:
//   optimizer        class name X from "Optimizer.step#X.step" annotations ("" if none);
//   optimizer_impl   fused: a _fused_* op/function (aten::_fused_adam_, _fused_adamw ...) or a Fused*
//                    optimizer class; foreach: aten::_foreach_* ops or _multi_tensor_* functions;
//                    single_tensor: _single_tensor_* functions, or host ops inside the optimizer
//                    step with none of the above (per-parameter aten::add_/mul_/addcmul_ ...);
//                    unknown otherwise. The first of fused > foreach > single_tensor wins.
//   optimizer_kernels_per_step  kernels launched from inside Optimizer.step# intervals / steps;
//   data_parallel    DataParallel.forward (not Distributed...), nn.Module: DataParallel, or the
//                    replicate / scatter_gather Python functions of torch.nn.parallel;
//   ddp              DistributedDataParallel.forward / nn.Module: DistributedDataParallel;
//   compiled         Triton kernels (triton_*), Torch-Compiled Region / CompiledFunction /
//                    TorchDynamo annotations;
//   comm_*           communication kernels (HTA's class: nccl*, ncclKernel, hccl*, rccl*):
//                    count, |union| (comm_time_ns), share of GPU busy time, share of step time,
//                    and overlap = |compute ∩ comm| / |comm| (compute = other kernels);
//   rank, world_size, backend   from distributedInfo.
#include <algorithm>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {

bool contains(std::string_view s, std::string_view t) { return s.find(t) != std::string_view::npos; }

}  // namespace

ParallelStats analyse_parallel(const TraceIndex& idx, const StepSummary& steps) {
  const auto& s = idx.s;
  ParallelStats out;
  out.rank = s.meta.distributed.rank;
  out.world_size = s.meta.distributed.world_size;
  out.backend = s.meta.distributed.backend;

  Intervals opt_steps;
  bool fused = false, foreach = false, single = false;
  auto look_at_name = [&](std::string_view n) {
    if (contains(n, "_fused_adam") || contains(n, "_fused_sgd") || contains(n, "_fused_adagrad") ||
        n.starts_with("aten::_fused_"))
      fused = true;
    if (n.starts_with("aten::_foreach_") || contains(n, "_multi_tensor_")) foreach = true;
    if (contains(n, "_single_tensor_")) single = true;
    if (n == "DataParallel.forward" || n.starts_with("nn.Module: DataParallel") ||
        contains(n, "parallel/replicate.py") || contains(n, "parallel/scatter_gather.py"))
      out.data_parallel = true;
    if (n == "DistributedDataParallel.forward" || n.starts_with("nn.Module: DistributedDataParallel"))
      out.ddp = true;
  };
  // look_at_name only sets flags: once per distinct name is enough (traces repeat a few
  // thousand names millions of times).
  std::vector<uint8_t> looked(s.strings.size(), 0);
  auto look_once = [&](uint32_t r) {
    if (!looked[s.name[r]]) looked[s.name[r]] = 1, look_at_name(s.name_of(r));
  };
  for (uint32_t r : idx.host_ops) {
    if (!idx.in_window(r)) continue;
    look_once(r);
    if (idx.flag(r, kCompiledRegion)) out.compiled = true;
    if (idx.flag(r, kOptimizerStep)) {
      std::string_view n = s.name_of(r);
      opt_steps.push_back({s.ts_ns[r], s.end_ns(r)});
      if (out.optimizer.empty()) {
        std::string_view cls = n.substr(15);
        cls = cls.substr(0, cls.find('.'));
        out.optimizer = std::string(cls);
      }
      if (n.starts_with("Optimizer.step#Fused")) fused = true;
    }
  }
  for (uint32_t r : idx.python) {
    if (!idx.in_window(r)) continue;
    look_once(r);
    if (idx.flag(r, kCompiledRegion)) out.compiled = true;
  }
  merge(opt_steps);

  // Host ops nested in the optimizer step (not the annotation itself): per-parameter updates.
  bool ops_in_step = false;
  if (!opt_steps.empty() && !fused && !foreach && !single) {
    for (uint32_t r : idx.host_ops) {
      if (!idx.flag(r, kAtenOp) || !idx.in_window(r) || s.cat[r] != trace::Category::CpuOp) continue;
      if (length_within(opt_steps, s.ts_ns[r], std::max(s.end_ns(r), s.ts_ns[r] + 1)) > 0) {
        ops_in_step = true;
        break;
      }
    }
  }
  out.optimizer_impl = fused ? "fused" : foreach ? "foreach" : (single || ops_in_step) ? "single_tensor"
                                                                                    : "unknown";

  Intervals comm, compute, busy;
  int64_t opt_kernels = 0;
  for (uint32_t r : idx.gpu) {
    if (!idx.in_window(r)) continue;
    const Interval iv{s.ts_ns[r], s.end_ns(r)};
    add_merged(busy, iv.begin, iv.end);  // idx.gpu is sorted by start: the lists stay merged
    if (s.cat[r] != trace::Category::Kernel) continue;
    if (idx.flag(r, kTritonKernel)) out.compiled = true;
    if (idx.flag(r, kCommKernel)) {
      add_merged(comm, iv.begin, iv.end);
      ++out.comm_kernels;
    } else {
      add_merged(compute, iv.begin, iv.end);
    }
    if (!opt_steps.empty()) {
      uint32_t rt = idx.launcher(r);
      if (rt != kNoRow && length_within(opt_steps, s.ts_ns[rt], s.ts_ns[rt] + 1) > 0) ++opt_kernels;
    }
  }
  merge(comm);
  merge(compute);
  merge(busy);
  out.comm_time_ns = length(comm);
  const int64_t busy_ns = length(busy);
  if (busy_ns > 0) out.comm_pct_of_gpu = 100.0 * out.comm_time_ns / busy_ns;
  if (out.comm_time_ns > 0)
    out.comm_overlap_pct = 100.0 * length(intersect(compute, comm)) / out.comm_time_ns;
  if (steps.total_ns > 0)
    out.comm_pct_of_step =
        100.0 * length(intersect(merged(step_intervals(steps)), comm)) / steps.total_ns;
  if (!steps.steps.empty())
    out.optimizer_kernels_per_step = opt_kernels / static_cast<int64_t>(steps.steps.size());
  return out;
}

}  // namespace ts::analysis
