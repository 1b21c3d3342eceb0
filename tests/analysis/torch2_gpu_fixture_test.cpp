// The PyTorch 2.x traces recorded on an H100 (tests/data/gpu_torch2/, provenance in
// tests/data/PROVENANCE.md): PyTorch 2.11's trace format with torch.compile (Inductor's Triton
// kernels launched through cuLaunchKernel, "## Call CompiledFxGraph ##" annotations), CUDA graph
// replays (cudaGraphLaunch), fused AdamW and bf16 autocast, which no other fixture has. Each must read
// and analyse without error. The expected counts are read off the files with Python's json module,
// never from trainscope's output:
//   python3 -c "import gzip,json,sys; e=json.load(gzip.open(sys.argv[1]))['traceEvents']; print(
//     sum(x.get('cat')=='kernel' for x in e), sum(x.get('cat')=='kernel' and x['name'].startswith('triton')
//     for x in e), sum(x.get('name')=='cudaGraphLaunch' for x in e),
//     sum(x.get('name')=='aten::_fused_adamw_' for x in e))" tests/data/gpu_torch2/<case>.pt.trace.json.gz
#include <gtest/gtest.h>

#include <string>

#include "analysis/trace_analysis.h"
#include "trace/reader.h"

namespace ts::analysis {
namespace {

struct Torch2Case {
  const char* name;        // scripts/gpu_check/torch2_case.py's case
  size_t kernels;          // events with cat "kernel"
  size_t triton;           // ... named triton_* (Inductor)
  size_t graph_launches;   // cudaGraphLaunch runtime calls
  size_t fused_adamw_ops;  // aten::_fused_adamw_ cpu_ops (AdamW(fused=True))
};

void PrintTo(const Torch2Case& c, std::ostream* os) { *os << c.name; }

const Torch2Case kCases[] = {
    {"compile_default", 235, 65, 0, 0},          // inductor
    {"compile_reduce_overhead", 245, 65, 10, 0},  // inductor + CUDA graphs (one replay per graph and step)
    {"compile_aot_eager", 250, 0, 0, 0},          // AOTAutograd, eager kernels
    {"compile_cudagraphs", 260, 0, 10, 0},        // the cudagraphs backend: eager kernels, replayed
    {"bf16_autocast", 425, 0, 0, 0},
    {"fused_adamw", 180, 0, 0, 5},
};

class Torch2GpuTrace : public ::testing::TestWithParam<Torch2Case> {};

std::string path_of(const Torch2Case& c) {
  return std::string(TS_TEST_DATA) + "/gpu_torch2/" + c.name + ".pt.trace.json.gz";
}

TEST_P(Torch2GpuTrace, ReadsWithItsKernelsAndGraphLaunches) {
  const Torch2Case& c = GetParam();
  trace::EventStore s = trace::read_trace(path_of(c));
  size_t kernels = 0, triton = 0, graph_launches = 0, fused = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string_view name = s.name_of(i);
    if (s.cat[i] == trace::Category::Kernel) {
      ++kernels;
      triton += name.starts_with("triton");
    }
    graph_launches += name == "cudaGraphLaunch";
    fused += name == "aten::_fused_adamw_";
  }
  EXPECT_EQ(kernels, c.kernels);
  EXPECT_EQ(triton, c.triton);
  EXPECT_EQ(graph_launches, c.graph_launches);
  EXPECT_EQ(fused, c.fused_adamw_ops);
  ASSERT_EQ(s.meta.devices.size(), 1u);  // deviceProperties: one entry
  EXPECT_EQ(s.meta.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.meta.devices[0].compute_major, 9);
}

TEST_P(Torch2GpuTrace, AnalysesWithoutError) {
  const Torch2Case& c = GetParam();
  TraceAnalysis a;
  ASSERT_NO_THROW(a = analyse(trace::read_trace(path_of(c))));
  EXPECT_EQ(a.device_name, "NVIDIA H100 80GB HBM3");
  // The agent's profiler window: ProfilerStep#10 .. #14 (user_annotation events in the file).
  ASSERT_EQ(a.steps.steps.size(), 5u);
  EXPECT_EQ(a.steps.steps.front().number, 10);
  EXPECT_TRUE(a.gpu.present);
  EXPECT_EQ(a.kernels.count, static_cast<int64_t>(c.kernels));
  EXPECT_EQ(a.kernels.triton_kernels, static_cast<int64_t>(c.triton));
  if (c.triton > 0) {
    EXPECT_TRUE(a.parallel.compiled);
  }
  // Every case steps torch.optim.AdamW ("Optimizer.step#AdamW.step" annotations); fused=True only in
  // fused_adamw (aten::_fused_adamw_), the default foreach path elsewhere (aten::_foreach_* ops).
  EXPECT_EQ(a.parallel.optimizer, "AdamW");
  EXPECT_EQ(a.parallel.optimizer_impl, c.fused_adamw_ops > 0 ? "fused" : "foreach");
  if (std::string(c.name) == "bf16_autocast") {
    // aten::mm/addmm/linear run with c10::BFloat16 inputs ("Input type" of 55 cpu_ops).
    auto it = a.precision.time_by_class_ns.find("bf16");
    ASSERT_NE(it, a.precision.time_by_class_ns.end());
    EXPECT_GT(it->second, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(H100, Torch2GpuTrace, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Torch2Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ts::analysis
