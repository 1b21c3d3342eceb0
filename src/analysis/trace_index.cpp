#include "analysis/trace_index.h"

#include <algorithm>

namespace ts::analysis {

using trace::Category;
using trace::Phase;

bool is_comm_kernel_name(std::string_view n) {
  if (n.starts_with("void ")) n.remove_prefix(5);
  return n.starts_with("nccl") || n.starts_with("hccl") || n.starts_with("rccl") ||
         n.find("ncclKernel") != std::string_view::npos ||
         n.find("ncclDevKernel") != std::string_view::npos;
}

uint16_t classify_name(std::string_view n) {
  uint16_t f = 0;
  if (is_comm_kernel_name(n)) f |= kCommKernel;
  if (n.starts_with("triton_") || n.starts_with("triton__")) f |= kTritonKernel;
  if ((n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__")) ||
      n.starts_with("enumerate(DataPipe)#"))
    f |= kDataLoader;
  if (n.starts_with("ProfilerStep#")) f |= kProfilerStep;
  if (n.starts_with("nccl:") || n.starts_with("gloo:")) f |= kCommOp;
  if (n.starts_with("Torch-Compiled Region") || n.starts_with("CompiledFunction") ||
      n.starts_with("TorchDynamo") || n.starts_with("## Call CompiledFxGraph"))
    f |= kCompiledRegion;
  return f;
}

TraceIndex::TraceIndex(const trace::EventStore& store) : s(store) {
  name_flags.resize(s.strings.size());
  for (uint32_t id = 0; id < s.strings.size(); ++id) name_flags[id] = classify_name(s.strings.view(id));

  const size_t n = s.size();
  for (uint32_t i = 0; i < n; ++i) {
    const Category c = s.cat[i];
    const Phase p = s.ph[i];
    if (c == Category::Memory) {
      memory.push_back(i);
      continue;
    }
    if (p != Phase::Complete) continue;
    switch (c) {
      case Category::Kernel: kernels.push_back(i); break;
      case Category::GpuMemcpy: memcpys.push_back(i); break;
      case Category::GpuMemset: memsets.push_back(i); break;
      case Category::CudaRuntime:
      case Category::CudaDriver:
        runtime.push_back(i);
        break;
      case Category::CpuOp:
      case Category::UserAnnotation: host_ops.push_back(i); break;
      case Category::PythonFunction: python.push_back(i); break;
      case Category::CudaSync: cuda_sync.push_back(i); break;
      case Category::Unknown:
        // Bare-array traces (PyTorch without Kineto) carry no cat: every X event is a host op.
        if (s.meta.format == trace::TraceFormat::BareArray) host_ops.push_back(i);
        break;
      default: break;
    }
  }
  auto by_ts = [this](uint32_t a, uint32_t b) {
    return s.ts_ns[a] != s.ts_ns[b] ? s.ts_ns[a] < s.ts_ns[b] : a < b;
  };
  // Lists are built in row order, so a stable sort by start alone equals (start, row) order;
  // most are nearly sorted already.
  auto ts_less = [this](uint32_t a, uint32_t b) { return s.ts_ns[a] < s.ts_ns[b]; };
  for (auto* v : {&kernels, &memcpys, &memsets, &runtime, &host_ops, &python, &memory, &cuda_sync})
    if (!std::is_sorted(v->begin(), v->end(), ts_less)) std::stable_sort(v->begin(), v->end(), ts_less);
  runtime_by_corr.reserve(runtime.size());
  for (uint32_t r : runtime)  // in time order: the first call with a correlation id wins
    if (s.correlation[r] != trace::kNone) runtime_by_corr.emplace(s.correlation[r], r);
  gpu.reserve(kernels.size() + memcpys.size() + memsets.size());
  gpu.insert(gpu.end(), kernels.begin(), kernels.end());
  gpu.insert(gpu.end(), memcpys.begin(), memcpys.end());
  gpu.insert(gpu.end(), memsets.begin(), memsets.end());
  std::stable_sort(gpu.begin(), gpu.end(), by_ts);
  // Launcher of every GPU event, looked up once here instead of in each analysis.
  launcher_.assign(s.size(), kNoRow);
  for (uint32_t g : gpu) {
    const int64_t c = s.correlation[g];
    if (c == trace::kNone) continue;
    auto it = runtime_by_corr.find(c);
    if (it != runtime_by_corr.end()) launcher_[g] = it->second;
  }
}


std::vector<uint32_t> TraceIndex::windowed(const std::vector<uint32_t>& list) const {
  std::vector<uint32_t> out;
  out.reserve(list.size());
  for (uint32_t r : list)
    if (in_window(r)) out.push_back(r);
  return out;
}

}  // namespace ts::analysis
