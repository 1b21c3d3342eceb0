// data-parallel: torch.nn.DataParallel (one process, one Python thread driving every GPU, the
// model re-replicated every step) instead of DistributedDataParallel (TB plugin:
// DataParallel.forward on > 1 device -> DDP; PyTorch's DataParallel docs recommend DDP).
// Evidence: the trace's DataParallel ops or the agent's module type.
// Helps only with >= 2 devices: on one device DataParallel calls the module directly (PyTorch's
// DataParallel.forward: `if len(self.device_ids) == 1: return self.module(...)`), so DDP has
// nothing to give back. With one device, or a device count the evidence does not give, the
// finding is an INFO note and claims no time.
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
  // Devices the job drives: the trace's GPUs with kernels, else the GPUs NVML sampled (every GPU
  // on the host: an upper bound); 0 unknown.
  int devices = 0;
  if (ev.trace && ev.trace->gpu.present) devices = ev.trace->gpu.devices;
  else if (ev.samples && ev.samples->nvml) devices = ev.samples->gpus;
  if (devices > 0) add(f, "devices", devices, "count");
  f.confidence = 0.9;
  if (devices < 2) {
    f.recoverable_fraction = 0;
    f.severity = Severity::Info;
    f.title = devices == 1 ? "DataParallel on one GPU: it calls the module directly, so it costs nothing and DDP gains nothing"
                           : "DataParallel: DDP is faster on several GPUs (how many this job drives is not in the evidence)";
    f.gain = devices == 1 ? "none: with one device DataParallel adds no replication or gather"
                          : "none claimed: with one device DataParallel costs nothing; on several, DDP keeps every GPU fed";
  } else {
    if (ev.trace && ev.trace->gpu.present) add(f, "gpu_idle_pct", ev.trace->gpu.idle_pct, "%");
    // DP's idle GPUs wait on the single driving thread; DDP recovers most of it.
    double idle = ev.trace && ev.trace->gpu.present ? ev.trace->gpu.idle_pct / 100 : -1;
    f.recoverable_fraction = idle >= 0 ? std::clamp(idle * 0.7, 0.0, 0.8) : 0.25;  // 0.25: an estimate
    f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Medium);
    f.title = fmt::format("DataParallel instead of DistributedDataParallel on {} GPUs", devices);
    f.gain = fmt::format("DDP keeps every GPU fed from its own process: {}", gain_text(f.recoverable_fraction));
  }
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
  point_at(f, ev, "forward", "the model is called here");
  return f;
}

}  // namespace ts::diagnose::rules
