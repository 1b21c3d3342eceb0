// The reading of the three-run lab: "if fp32 -> bfloat16 is a small jump (less than 20%), the
// bottleneck is not precision - the GPU is waiting on something else, usually the DataLoader. If
// bfloat16 -> compile is a small jump, the kernels are already well-fused for your model shape. If
// both transitions are large, you had room in both and you should take it."
// A transition that makes the step slower is no "small jump": the reading says slower, by how
// much, and why (bf16: too little work per kernel for Tensor Cores to pay for autocast's casts,
// or an emulating CPU; compile: a compiled step slower than eager at this size, and compilation
// not paid back over the measured steps).
#include <fmt/format.h>

#include "experiment/lab.h"

namespace ts::experiment {

static double pct(double ratio) { return (ratio - 1.0) * 100.0; }

// "3.61 -> 4.74 ms per step" from the two configurations' median steps (empty when unknown).
static std::string steps_text(const LabConfigResult* a, const LabConfigResult* b) {
  if (a->step_ms_median <= 0 || b->step_ms_median <= 0) return "";
  return fmt::format(": {:.2f} -> {:.2f} ms per step", a->step_ms_median, b->step_ms_median);
}

// Why bf16 made the step slower on a GPU. Tensor Cores speed up the arithmetic of matmuls and
// convolutions; autocast adds a cast kernel for every weight and input it converts, every step.
// When each kernel holds little work (a short step, a small batch) the casts and their launches
// cost more than the faster arithmetic saves (NVIDIA's "Matrix Multiplication Background" guide:
// small GEMMs are bound by memory and latency, not by math throughput).
static std::string bf16_slower_why(const LabConfigResult* fp32, const LabConfigResult* bf16) {
  std::string s = fmt::format(
      " Why: too little work per kernel for Tensor Cores to pay off: the fp32 step is {:.2f} ms for a batch of {}, "
      "so the matmuls and convolutions are small and their time is launches and memory traffic, not arithmetic; "
      "and autocast adds a cast kernel for each weight and input it converts, every step (more kernels, more "
      "launches, more memory traffic). A larger batch or model gives Tensor Cores work to speed up; at this size "
      "keep fp32 (TF32 matmuls: torch.set_float32_matmul_precision(\"high\")).",
      fp32->step_ms_median, fp32->batch_size > 0 ? std::to_string(fp32->batch_size) : "unknown size");
  if (bf16->data_wait_pct >= 0)
    s += fmt::format(" Waiting for the next batch was {:.0f}% of the bf16 step, about the same share in both runs.",
                     bf16->data_wait_pct);
  return s;
}

// Why compile made the step slower: the compiled step itself is slower (guards and the compiled
// graph's entry cost more than the fusion saves when kernels are this small; the default mode
// still launches every kernel), and compilation is not paid back over the measured steps.
static std::string compile_slower_why(const LabConfigResult* bf16, const LabConfigResult* comp) {
  std::string s =
      " Why: at this size the compiled step's fixed costs (guard checks, the compiled graph's entry, one launch per "
      "remaining kernel in the default mode) outweigh what fusing the small kernels saves";
  const double extra_ms = comp->warmup_ms - bf16->warmup_ms;
  const double measured_ms = comp->steps * comp->step_ms_median;
  if (extra_ms > 0 && measured_ms > 0)
    s += fmt::format("; and compilation is not amortised: the warm-up took {:.1f} s more than bf16's, {:.0f}x the {} "
                     "measured steps ({:.2f} s), and with each step slower it never pays back",
                     extra_ms / 1e3, extra_ms / measured_ms, comp->steps, measured_ms / 1e3);
  s += ". Try mode=\"reduce-overhead\" (CUDA graphs: one launch per step) or a larger batch before keeping compile.";
  return s;
}

void read_lab(LabResult& r) {
  r.readings.clear();
  const LabConfigResult* fp32 = r.find("fp32");
  const LabConfigResult* bf16 = r.find("bf16");
  const LabConfigResult* comp = r.find("bf16+compile");
  auto ran = [](const LabConfigResult* c) { return c && c->ok() && c->samples_per_s > 0; };
  r.bf16_speedup = ran(fp32) && ran(bf16) ? bf16->samples_per_s / fp32->samples_per_s : -1;
  r.compile_speedup = ran(bf16) && ran(comp) ? comp->samples_per_s / bf16->samples_per_s : -1;
  r.total_speedup = ran(fp32) && ran(comp) ? comp->samples_per_s / fp32->samples_per_s : -1;
  bool on_cpu = r.device == "cpu";

  if (r.bf16_speedup > 0) {
    if (r.bf16_speedup < 1.0) {
      r.readings.push_back(
          {"bf16-slower",
           fmt::format("fp32 -> bf16 is slower ({:+.0f}%{}).{}", pct(r.bf16_speedup), steps_text(fp32, bf16),
                       on_cpu ? " On a CPU without native bf16 instructions (AVX512-BF16/AMX) bf16 autocast is emulated; "
                                "the lab's precision reading is meant for GPUs."
                              : bf16_slower_why(fp32, bf16)),
           r.bf16_speedup});
      if (on_cpu)
        r.readings.push_back(
            {"cpu-bf16-emulated",
             "On a CPU without native bf16 instructions (AVX512-BF16/AMX) bf16 autocast is emulated and slower "
             "than fp32; the lab's precision reading is meant for GPUs.",
             r.bf16_speedup});
    } else if (r.bf16_speedup < kLabSmallJump) {
      std::string wait;
      if (bf16->data_wait_pct >= 0)
        wait = fmt::format(" In the bf16 run {:.0f}% of each step was spent waiting for the next batch.",
                           bf16->data_wait_pct);
      r.readings.push_back(
          {"precision-not-bottleneck",
           fmt::format("fp32 -> bf16 is a small gain ({:+.0f}%, under 20%): precision is not the bottleneck; the "
                       "step is waiting on something else, usually the DataLoader.{} Look at the data next: "
                       "`trainscope loader {}`.",
                       pct(r.bf16_speedup), wait, r.target),
           r.bf16_speedup});
    } else {
      r.readings.push_back({"bf16-helps",
                            fmt::format("fp32 -> bf16 is a large jump ({:+.0f}%): precision was holding you back; "
                                        "train under torch.autocast(dtype=torch.bfloat16).",
                                        pct(r.bf16_speedup)),
                            r.bf16_speedup});
    }
  } else if (bf16 && !bf16->ok()) {
    r.readings.push_back({"bf16-untested", fmt::format("bf16 did not run ({}).", bf16->reason), 0});
  }

  if (r.compile_speedup > 0) {
    if (r.compile_speedup < 1.0) {
      r.readings.push_back({"compile-slower",
                            fmt::format("bf16 -> bf16 + compile is slower ({:+.0f}%{}).{}", pct(r.compile_speedup),
                                        steps_text(bf16, comp), compile_slower_why(bf16, comp)),
                            r.compile_speedup});
    } else if (r.compile_speedup < kLabSmallJump) {
      r.readings.push_back({"kernels-already-fused",
                            fmt::format("bf16 -> bf16 + compile is a small gain ({:+.0f}%): the kernels are already "
                                        "well fused for this model shape; torch.compile buys little here.",
                                        pct(r.compile_speedup)),
                            r.compile_speedup});
    } else {
      r.readings.push_back({"compile-helps",
                            fmt::format("bf16 -> bf16 + compile is a large jump ({:+.0f}%): launch overhead and "
                                        "unfused kernels were costing you; wrap the model in torch.compile.",
                                        pct(r.compile_speedup)),
                            r.compile_speedup});
    }
  } else if (comp && !comp->ok()) {
    r.readings.push_back({"compile-untested", fmt::format("bf16 + compile did not run ({}).", comp->reason), 0});
  }

  if (r.bf16_speedup >= kLabSmallJump && r.compile_speedup >= kLabSmallJump)
    r.readings.push_back({"take-both",
                          fmt::format("Both transitions are large ({:+.0f}% and {:+.0f}%, {:.2f}x in all): you had "
                                      "room in both; take both.",
                                      pct(r.bf16_speedup), pct(r.compile_speedup), r.total_speedup),
                          r.total_speedup});
}

}  // namespace ts::experiment
