#include "trace/event_store.h"

#include <cctype>

namespace ts::trace {

const char* category_name(Category c) {
  switch (c) {
    case Category::Unknown: return "unknown";
    case Category::CpuOp: return "cpu_op";
    case Category::UserAnnotation: return "user_annotation";
    case Category::GpuUserAnnotation: return "gpu_user_annotation";
    case Category::PythonFunction: return "python_function";
    case Category::CudaRuntime: return "cuda_runtime";
    case Category::CudaDriver: return "cuda_driver";
    case Category::Kernel: return "kernel";
    case Category::GpuMemcpy: return "gpu_memcpy";
    case Category::GpuMemset: return "gpu_memset";
    case Category::CudaSync: return "cuda_sync";
    case Category::CpuInstantEvent: return "cpu_instant_event";
    case Category::Overhead: return "overhead";
    case Category::Trace: return "trace";
    case Category::FlowLaunch: return "ac2g";
    case Category::FlowFwdBwd: return "fwdbwd";
    case Category::Memory: return "memory";
    case Category::Other: return "other";
  }
  return "unknown";
}

static bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

Category parse_category(std::string_view c) {
  struct Entry {
    std::string_view lower;
    Category cat;
  };
  static constexpr Entry table[] = {
      {"cpu_op", Category::CpuOp},
      {"operator", Category::CpuOp},
      {"kernel", Category::Kernel},
      {"cuda_runtime", Category::CudaRuntime},
      {"runtime", Category::CudaRuntime},
      {"cuda_driver", Category::CudaDriver},
      {"driver", Category::CudaDriver},
      {"gpu_memcpy", Category::GpuMemcpy},
      {"memcpy", Category::GpuMemcpy},
      {"gpu_memset", Category::GpuMemset},
      {"memset", Category::GpuMemset},
      {"user_annotation", Category::UserAnnotation},
      {"gpu_user_annotation", Category::GpuUserAnnotation},
      {"python_function", Category::PythonFunction},
      {"cuda_sync", Category::CudaSync},
      {"cpu_instant_event", Category::CpuInstantEvent},
      {"overhead", Category::Overhead},
      {"trace", Category::Trace},
      {"ac2g", Category::FlowLaunch},
      {"async_cpu_to_gpu", Category::FlowLaunch},
      {"async", Category::FlowLaunch},
      {"fwdbwd", Category::FlowFwdBwd},
  };
  for (const auto& e : table)
    if (ieq(c, e.lower)) return e.cat;
  return c.empty() ? Category::Unknown : Category::Other;
}

size_t EventStore::add(uint32_t name_id, Category c, Phase p, int64_t pid_v, int64_t tid_v,
                       int64_t ts, int64_t dur, int64_t corr, int64_t ext, uint32_t args_idx,
                       uint32_t dims, uint32_t types) {
  name.push_back(name_id);
  cat.push_back(c);
  ph.push_back(p);
  pid.push_back(pid_v);
  tid.push_back(tid_v);
  ts_ns.push_back(ts);
  dur_ns.push_back(dur);
  correlation.push_back(corr);
  external_id.push_back(ext);
  args.push_back(args_idx);
  input_dims.push_back(dims);
  input_types.push_back(types);
  return name.size() - 1;
}

void EventStore::reserve(size_t n) {
  name.reserve(n);
  cat.reserve(n);
  ph.reserve(n);
  pid.reserve(n);
  tid.reserve(n);
  ts_ns.reserve(n);
  dur_ns.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
  args.reserve(n);
  input_dims.reserve(n);
  input_types.reserve(n);
}

}  // namespace ts::trace
