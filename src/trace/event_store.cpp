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
  thread.push_back(thread_of(pid_v, tid_v));
  ts_ns.push_back(ts);
  dur_ns.push_back(dur);
  correlation.push_back(corr);
  external_id.push_back(ext);
  args.push_back(args_idx);
  input_dims.push_back(dims);
  input_types.push_back(types);
  return name.size() - 1;
}

uint32_t EventStore::find_thread(int64_t pid_v, int64_t tid_v) {
  // A linear search: a trace has tens of threads and streams, and this runs only where the
  // cache's slot holds another pair.
  uint32_t k = 0;
  while (k < threads.size() && !(threads[k].pid == pid_v && threads[k].tid == tid_v)) ++k;
  if (k == threads.size()) threads.push_back({pid_v, tid_v});
  thread_cache_[thread_slot(pid_v, tid_v)] = {pid_v, tid_v, k};
  return k;
}

void EventStore::reserve(size_t n) {
  name.reserve(n);
  cat.reserve(n);
  ph.reserve(n);
  thread.reserve(n);
  ts_ns.reserve(n);
  dur_ns.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
  args.reserve(n);
  input_dims.reserve(n);
  input_types.reserve(n);
}

}  // namespace ts::trace

namespace ts::trace {

void EventStore::clear_rows() {
  for (auto* col : {&name, &thread, &args, &input_dims, &input_types}) col->clear();
  for (auto* col : {&ts_ns, &dur_ns, &correlation, &external_id}) col->clear();
  threads.clear();
  for (ThreadSlot& c : thread_cache_) c = ThreadSlot{};
  cat.clear();
  ph.clear();
  args_table.clear();
  comm_args.clear();
  strings = StringPool();
  meta = TraceMeta();
  process_names.clear();
  thread_names.clear();
}

void append_store(EventStore& into, EventStore& from) {
  std::vector<uint32_t> id(from.strings.size());
  for (uint32_t i = 0; i < id.size(); ++i) id[i] = into.strings.intern(from.strings.view(i));
  auto named = [&](int64_t v) {
    return EventStore::is_named_id(v) ? EventStore::named_id(id[static_cast<size_t>(v - kNamedIdBase)]) : v;
  };
  const uint32_t args0 = static_cast<uint32_t>(into.args_table.size());
  // Appended element by element, never resized then overwritten: the destination is fresh
  // memory, and a resize would first write zeros over it.
  auto copy = [](auto& dst, const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
  auto copy_mapped = [](auto& dst, const auto& src, auto f) {
    for (auto v : src) dst.push_back(f(v));
  };
  auto str = [&](uint32_t v) { return id[v]; };
  copy_mapped(into.name, from.name, str);
  copy_mapped(into.input_dims, from.input_dims, str);
  copy_mapped(into.input_types, from.input_types, str);
  copy(into.cat, from.cat);
  copy(into.ph, from.ph);
  std::vector<uint32_t> thread_id(from.threads.size());
  for (size_t i = 0; i < thread_id.size(); ++i)
    thread_id[i] = into.thread_of(named(from.threads[i].pid), named(from.threads[i].tid));
  copy_mapped(into.thread, from.thread, [&](uint32_t t) { return thread_id[t]; });
  copy(into.ts_ns, from.ts_ns);
  copy(into.dur_ns, from.dur_ns);
  copy(into.correlation, from.correlation);
  copy(into.external_id, from.external_id);
  copy_mapped(into.args, from.args, [&](uint32_t a) { return a == kNoArgs ? kNoArgs : a + args0; });
  // Args rows point into comm_args, and comm_args hold string ids: both renumbered.
  const uint32_t comm0 = static_cast<uint32_t>(into.comm_args.size());
  for (EventArgs a : from.args_table) {
    if (a.comm != kNoComm) a.comm += comm0;
    into.args_table.push_back(a);
  }
  for (CommArgs c : from.comm_args) {
    for (uint32_t* s : {&c.collective, &c.dtype, &c.group_name, &c.group_ranks}) *s = *s ? id[*s] : 0;
    into.comm_args.push_back(c);
  }
  for (const auto& e : from.process_names) into.process_names.push_back({named(e.pid), kNone, id[e.name]});
  for (const auto& e : from.thread_names) into.thread_names.push_back({named(e.pid), named(e.tid), id[e.name]});
  into.meta.is_rocm = into.meta.is_rocm || from.meta.is_rocm;
  into.meta.flow_events += from.meta.flow_events;
  from.clear_rows();
}

}  // namespace ts::trace
