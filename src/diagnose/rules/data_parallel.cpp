// data-parallel: torch.nn.DataParallel (one process, one Python thread driving every GPU, the
// model re-replicated every step) instead of DistributedDataParallel (TB plugin:
// DataParallel.forward on > 1 device -> DDP; PyTorch's DataParallel docs recommend DDP).
// Evidence: the trace's DataParallel ops or the agent's module type.
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> data_parallel(const Evidence& ev) {
  bool in_trace = ev.trace && ev.trace->parallel.data_parallel;
  bool in_agent = ev.agent && ev.agent->data_parallel;
  if (!in_trace && !in_agent) return std::nullopt;
  Finding f = make("data-parallel", Bottleneck::Communication, in_trace ? "trace" : "agent");
  add(f, "data_parallel", 1, "bool");
  if (ev.trace && ev.trace->gpu.present) {
    add(f, "gpu_idle_pct", ev.trace->gpu.idle_pct, "%");
    add(f, "devices", ev.trace->gpu.devices, "count");
    // DP's idle GPUs wait on the single driving thread; DDP recovers most of it.
    f.recoverable_fraction = std::clamp(ev.trace->gpu.idle_pct / 100 * 0.7, 0.0, 0.8);
  } else {
    f.recoverable_fraction = 0.25;  // DDP is typically much faster; an estimate
  }
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Medium);
  f.confidence = 0.9;
  f.title = "DataParallel instead of DistributedDataParallel";
  f.gain = fmt::format("DDP keeps every GPU fed from its own process: {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "torch.nn.DataParallel drives all GPUs from one Python process: it scatters the batch, "
      "replicates the model to every GPU each step and gathers the outputs on GPU 0, all under one "
      "GIL. The PyTorch docs recommend DistributedDataParallel, one process per GPU with gradient "
      "all-reduce overlapped with the backward pass, which \"offers much better performance and "
      "scaling to multiple-GPUs\".";
  f.fix = "One process per GPU with DistributedDataParallel, launched by torchrun; a DistributedSampler in the DataLoader.";
  f.fix_code =
      "# torchrun --nproc_per_node=NGPU train.py\n"
      "torch.distributed.init_process_group(\"nccl\")\n"
      "local_rank = int(os.environ[\"LOCAL_RANK\"]); torch.cuda.set_device(local_rank)\n"
      "model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[local_rank])\n"
      "loader = DataLoader(ds, batch_size=BS, sampler=DistributedSampler(ds))";
  return f;
}

}  // namespace ts::diagnose::rules
