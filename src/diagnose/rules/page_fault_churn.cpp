// page-fault-churn: large tensors freed and allocated again every step, each time as pages the
// kernel maps and zero-fills anew. glibc's malloc serves a block above its mmap threshold (at most
// 32 MiB on 64-bit Linux: man mallopt, M_MMAP_THRESHOLD) with its own mmap and returns it to the
// kernel at free(), so the next step's block of the same size faults in fresh zeroed pages again:
// the job's CPU goes to the kernel (stime) instead of the model.
// Evidence (samples, over the steady steps): the kernel's share of the job's CPU >=
// kPageFaultSysShare with >= kPageFaultMinPerS minor page faults per second, few enough kernel
// microseconds per fault that the faults are its time (gloo's sockets, a loader's reads are not
// this, nor is their fix this one). Premise, measured:
// a CPU-only run (the CPU is the device, so the kernel's time is on the step's path) whose loop
// loads in its own process (DataLoader workers hand batches over in fresh shared memory, faults
// of another kind, with another fix), and a busy job.
// Gain: the kernel's share of the job's CPU, a floor: the fix also spares the user side's first
// touch of cold pages (word_language_model's Transformer: 22% in the kernel, 1.42x measured =
// 30% of the step; its LSTM: 28%, 1.36-1.44x; healthy_mlp 22-24%, 1.5x). Checked on pytorch/examples' gat (a 2708-node
// graph's dense attention, 235 MB blocks): 39-48% in the kernel, 390-540 k faults/s; with
// MALLOC_MMAP_MAX_=0 the step went 2597-2675 -> 1562-1566 ms (1.66-1.71x, up to 1.9x predicted),
// its peak RSS 2.8 -> 6.8 GB (docs/BENCHMARKS.md, session 51).
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"
#include "util/format.h"

namespace ts::diagnose::rules {

std::optional<Finding> page_fault_churn(const Evidence& ev) {
  if (!ev.samples || !agent_without_cuda(ev) || ev.agent->steps <= 0) return std::nullopt;
  const auto& s = *ev.samples;
  const double cpu = s.process_tree_cpu_mean_pct, sys = s.process_tree_sys_mean_pct;
  const double faults = s.process_tree_minflt_mean_per_s;
  if (cpu < th::kPageFaultBusyPct || sys < 0 || faults < th::kPageFaultMinPerS) return std::nullopt;
  const double us_per_fault = 1e6 * (sys / 100) / faults;  // the kernel's CPU seconds per second, per fault
  if (us_per_fault > th::kPageFaultMaxUsPerFault) return std::nullopt;
  // Memory the job keeps (a leak, a cache filling) comes as fresh pages whatever malloc does: those
  // faults, the heap's rise per step over the step's time, are not the churn this fix removes.
  const auto& a = *ev.agent;
  const double growth_faults =
      a.step_ms > 0 ? std::max(0.0, a.mem_slope_bytes_per_step) / 4096 / (a.step_ms / 1e3) : 0;
  const double churn = faults - growth_faults;
  const double kernel_share = sys / cpu;
  const double share = kernel_share * std::max(0.0, churn) / faults;
  if (churn < th::kPageFaultMinPerS || share < th::kPageFaultSysShare) return std::nullopt;
  for (const auto& l : ev.agent->loaders)
    if (l.num_workers > 0) return std::nullopt;  // its workers' shared memory: not malloc's pages
  const double fresh_mib_per_s = churn * 4096 / (1024.0 * 1024.0);  // 4 KiB pages
  Finding f = make("page-fault-churn", Bottleneck::Memory, "samples");
  add(f, "kernel_cpu_pct", 100 * kernel_share, "%");
  add(f, "minor_faults_per_s", faults, "count");
  const bool growth_said = growth_faults >= 0.01 * faults;  // a heap's noise (27 B a step) is not worth a line
  if (growth_said) add(f, "growth_faults_per_s", growth_faults, "count");
  add(f, "fresh_mib_per_s", fresh_mib_per_s, "MiB/s");
  add(f, "kernel_us_per_fault", us_per_fault, "us");
  add(f, "process_cpu_mean_pct", cpu, "%");
  f.confidence = 0.75;
  f.recoverable_fraction = std::clamp(share, 0.0, 0.9);
  f.severity = severity_for(f.recoverable_fraction);
  f.title = fmt::format("The kernel takes {:.0f}% of the job's CPU handing it fresh zeroed memory: {:.0f} MiB/s of new "
                        "pages",
                        100 * share, fresh_mib_per_s);
  f.gain = fmt::format("keeping freed blocks for reuse gives back the kernel's share: {}",
                       gain_text(f.recoverable_fraction));
  f.explanation = fmt::format(
      "The job's processes spent {:.0f}% of their CPU time in the kernel and took {:.0f} minor page faults a second "
      "(each a 4 KiB page mapped and zero-filled). On a CPU-only run that is time the model does not get. glibc's "
      "malloc serves each block above its mmap threshold (at most 32 MiB; man mallopt, M_MMAP_THRESHOLD) with a "
      "mapping of its own and unmaps it at free(), so a large tensor freed and allocated again every step (an "
      "activation, an attention matrix, a dense gradient, an optimizer's temporaries) comes back as new pages the "
      "kernel zeroes each time.{}",
      100 * kernel_share, faults,
      growth_said ? fmt::format(" Of those faults, {:.0f} a second are the memory the job keeps (its heap rises {} "
                                "a step): fresh pages whatever malloc does, left out of the gain.",
                                growth_faults, ts::human_bytes(a.mem_slope_bytes_per_step))
                  : std::string());
  f.fix = "Let malloc keep and reuse large blocks: run with MALLOC_MMAP_MAX_=0 and a high MALLOC_TRIM_THRESHOLD_ "
          "(glibc's tunables, man mallopt). The heap then holds the peak of what the step frees, and fragments: "
          "measured, the peak memory grew 2.4x. Check the run's memory with the change.";
  f.fix_settings = {{"malloc.mmap", "false"}};
  f.fix_code =
      "# shell: keep large blocks in malloc's heap instead of returning them to the kernel at each free()\n"
      "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 " + job_command(ev, "python train.py");
  point_at(f, ev, "forward", "the training step's model call: its large blocks are allocated anew every step");
  return f;
}

}  // namespace ts::diagnose::rules
