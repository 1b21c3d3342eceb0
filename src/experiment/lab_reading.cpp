// The reading of the three-run lab: "if fp32 -> bfloat16 is a small jump (less than 20%), the
// bottleneck is not precision - the GPU is waiting on something else, usually the DataLoader. If
// bfloat16 -> compile is a small jump, the kernels are already well-fused for your model shape. If
// both transitions are large, you had room in both and you should take it."
#include <fmt/format.h>

#include "experiment/lab.h"

namespace ts::experiment {

static double pct(double ratio) { return (ratio - 1.0) * 100.0; }

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
    if (r.bf16_speedup < kLabSmallJump) {
      std::string wait;
      if (bf16->data_wait_pct >= 0)
        wait = fmt::format(" In the bf16 run {:.0f}% of each step was spent waiting for the next batch.",
                           bf16->data_wait_pct);
      r.readings.push_back(
          {"precision-not-bottleneck",
           fmt::format("fp32 -> bf16 is a small jump ({:+.0f}%, under 20%): precision is not the bottleneck; the "
                       "step is waiting on something else, usually the DataLoader.{} Look at the data next: "
                       "`trainscope loader {}`.",
                       pct(r.bf16_speedup), wait, r.target),
           r.bf16_speedup});
      if (on_cpu && r.bf16_speedup < 1.0)
        r.readings.push_back(
            {"cpu-bf16-emulated",
             "On a CPU without native bf16 instructions (AVX512-BF16/AMX) bf16 autocast is emulated and slower "
             "than fp32; the lab's precision reading is meant for GPUs.",
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
    if (r.compile_speedup < kLabSmallJump) {
      r.readings.push_back({"kernels-already-fused",
                            fmt::format("bf16 -> bf16 + compile is a small jump ({:+.0f}%): the kernels are already "
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
