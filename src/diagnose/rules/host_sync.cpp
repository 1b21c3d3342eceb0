// host-sync: the training loop blocks on the GPU every step (.item(), .cpu(), print(loss),
// torch.cuda.synchronize()), so the CPU cannot queue the next kernels ahead and the GPU drains.
// Evidence, first that applies:
//  - the trace's idle attribution (analysis/idle_attribution.cpp): GPU idle charged to blocking
//    calls (cause "sync": the call was open when the GPU ran dry, or the GPU idled inside it)
//    >= kSyncPctOfStep of step time, the largest such call at least once per step (kSyncPerStep).
//    Names the call, its op, annotation and Python frame; gain = that idle time;
//  - without an attribution (no GPU events): the trace's synchronisations (>= 1 per step costing
//    >= 1% of step time), gain bounded by HTA's host-wait idle time;
//  - the agent's count of .item()-style calls per step.
#include <algorithm>
#include <fmt/format.h>

#include "analysis/trace_index.h"
#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

namespace {
// The draining call is a copy: a sync inside aten::to/_to_copy/copy_ as the outermost op
// (PyTorch's blocking copy is an async copy plus a stream sync, or hipMemcpyWithStream), or a
// blocking memcpy under no op at all. Not one under aten::item / _local_scalar_dense: .item()
// copies its scalar back too, and its fix is not pinned memory. A copy back (.cpu()) is a read of
// a value, fixed like .item(); a copy to the GPU wants pinned memory and non_blocking=True.
bool copy_drain(const analysis::IdleEntry& e) {
  if (e.op == "aten::to" || e.op == "aten::_to_copy" || e.op == "aten::copy_") return true;
  return e.op.empty() && analysis::is_memcpy_call(e.host_event);
}
}  // namespace

std::optional<Finding> host_sync(const Evidence& ev) {
  Finding f;
  bool copy = false;
  const auto* t = trace_with_steps(ev);
  if (const auto* a = idle_attribution(ev); t && a) {
    const int64_t sync_ns = a->cause_ns(analysis::IdleCause::Sync);
    const analysis::IdleEntry* top = top_idle_entry(*a, analysis::IdleCause::Sync);
    const double steps = std::max<size_t>(1, t->steps.steps.size());
    const double pct = 100.0 * sync_ns / t->steps.total_ns;
    if (!top || pct < th::kSyncPctOfStep || top->gaps / steps < th::kSyncPerStep) return std::nullopt;
    f = make("host-sync", Bottleneck::HostSync, "trace");
    add(f, "sync_idle_ms_per_step", sync_ns / steps / 1e6, "ms");
    add(f, "sync_idle_pct_of_step", pct, "%");
    add(f, "drains_per_step", top->gaps / steps, "count");
    if (t->syncs.count > 0) add(f, "syncs_per_step", t->syncs.per_step, "count");
    if (t->syncs.item_calls > 0) add(f, "item_calls_per_step", t->syncs.item_calls / steps, "count");
    f.recoverable_fraction = std::clamp(double(sync_ns) / t->steps.total_ns, 0.0, 0.9);
    f.confidence = 0.85;
    copy = copy_drain(*top);
    point_at_frame(f, *top, fmt::format("the GPU drains here {:.1f}x per step (the trace's Python stack)", top->gaps / steps));
    f.title = fmt::format("A blocking {} drains the GPU {:.1f}x per step: {}; the GPU idles {:.1f} ms per step ({:.1f}% of step time)",
                          copy ? "copy" : "call", top->gaps / steps, idle_where(*top), sync_ns / steps / 1e6, pct);
  } else if (t && !a && t->syncs.count > 0 && t->gpu.present) {
    // Only with a GPU in the trace: on a CPU-only run .item() and friends read host memory and
    // nothing drains (their time under load is the CPU's, not a sync's).
    const auto& s = t->syncs;
    // Only kinds seen at least once per step: a one-off sync (profiler start, end of an epoch)
    // costs nothing per step. Blocking copies are pageable-memcpy's.
    double steps = std::max<size_t>(1, t->steps.steps.size());
    double every_step_ns = 0, every_step_count = 0;
    std::vector<analysis::SyncRow> rows;
    for (const auto& r : s.rows) {
      if (r.count < steps || r.kind.find("emcpy") != std::string::npos) continue;
      every_step_ns += r.time_ns;
      every_step_count = std::max<double>(every_step_count, r.count);
      rows.push_back(r);
    }
    every_step_ns = std::min<double>(every_step_ns, s.time_ns);
    double pct = 100.0 * every_step_ns / t->steps.total_ns;
    if (every_step_count / steps < th::kSyncPerStep || pct < th::kSyncPctOfStep) return std::nullopt;
    f = make("host-sync", Bottleneck::HostSync, "trace");
    add(f, "syncs_per_step", every_step_count / steps, "count");
    add(f, "sync_ms_per_step", every_step_ns / steps / 1e6, "ms");
    add(f, "sync_pct_of_step", pct, "%");
    if (s.item_calls > 0)
      add(f, "item_calls_per_step", t->steps.steps.empty() ? s.item_calls : double(s.item_calls) / t->steps.steps.size(), "count");
    // The host waiting is not lost by itself (the GPU is busy meanwhile); what is lost is the GPU
    // idling afterwards until the host launches again: bounded by HTA's host-wait idle time.
    double lost = every_step_ns;
    if (t->gpu.present) lost = std::min(lost, double(t->gpu.idle_host_wait_ns));
    f.recoverable_fraction = std::clamp(lost / t->steps.total_ns, 0.0, 0.9);
    f.confidence = 0.8;
    std::string kinds;
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.time_ns > b.time_ns; });
    for (size_t i = 0; i < rows.size() && i < 3; ++i)
      kinds += fmt::format("{}{} x{}", i ? ", " : "", rows[i].kind, rows[i].count);
    f.title = fmt::format("Host syncs every step: {:.1f} per step ({}), {:.1f}% of step time",
                          every_step_count / steps, kinds.empty() ? "synchronisations" : kinds, pct);
  } else if (ev.agent && ev.agent->item_calls_per_step >= 1 && ev.agent->param_device.rfind("cuda", 0) == 0) {
    // The agent's count alone: a sync only when the model lives on a CUDA device.
    f = make("host-sync", Bottleneck::HostSync, "agent");
    add(f, "item_calls_per_step", ev.agent->item_calls_per_step, "count");
    f.recoverable_fraction = 0.02;  // a count alone does not say how long the GPU drains
    f.confidence = 0.6;
    f.title = fmt::format("Host syncs every step: {} .item()/.cpu() calls per step", ev.agent->item_calls_per_step);
  } else {
    return std::nullopt;
  }
  f.severity = std::max(severity_for(f.recoverable_fraction), Severity::Low);
  f.gain = fmt::format("the GPU drains at each sync: removing them gives {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "CUDA runs asynchronously: the CPU queues kernels and moves on. A call that needs a value "
      "from the GPU (loss.item(), .cpu(), .tolist(), print(loss), torch.cuda.synchronize(), "
      "nonzero(), a blocking copy) makes the CPU wait until the queue is empty; afterwards the GPU "
      "idles while the CPU prepares the next launches. Once per step this caps throughput.";
  if (copy) {
    // Which way the copy goes is not in the op, so the fix names both and verify applies neither.
    f.fix = "If the copy reads a value back to the host (.cpu(), .tolist(), .numpy()), keep that value on the GPU "
            "and read it every N steps. If it moves a batch to the GPU, copy without blocking: pin_memory=True on "
            "the DataLoader and .to(device, non_blocking=True) (PyTorch docs, \"pin_memory\" and Tensor.to).";
    f.fix_code =
        "# a value read back every step: accumulate on the GPU, read every N steps\n"
        "correct += (out.argmax(1) == y).sum()          # no sync\n"
        "# a batch copied to the GPU: pinned memory and a non-blocking copy\n"
        "loader = DataLoader(dataset, batch_size=BS, num_workers=N, pin_memory=True)\n"
        "xb = xb.to(\"cuda\", non_blocking=True)";
    point_at_calls(f, ev, {"item", "cpu", "tolist", "synchronize", "h2d"});
    return f;
  }
  f.fix = "Keep running metrics on the GPU and read them every N steps; never print or .item() a tensor each step.";
  f.fix_code =
      "running = torch.zeros((), device=\"cuda\")\n"
      "running += loss.detach()          # no sync\n"
      "if step % 100 == 0:\n"
      "    print(running.item() / 100)   # one sync every 100 steps\n"
      "    running.zero_()";
  point_at_calls(f, ev, {"item", "cpu", "tolist", "synchronize"});
  return f;
}

}  // namespace ts::diagnose::rules
