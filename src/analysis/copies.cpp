// Copies (docs/ANALYSES.md). Over the GPU memcpy and memset events starting inside the
// analysis window, grouped by (direction, memory kind) parsed from the event name:
//   "Memcpy HtoD (Pageable -> Device)"  -> HtoD, pageable   (host side of a HtoD: the source)
//   "Memcpy DtoH (Device -> Pinned)"    -> DtoH, pinned     (host side of a DtoH: the destination)
//   "Memcpy DtoD (Device -> Device)"    -> DtoD, device;  PtoP -> device
//   "Memcpy HtoD (Host -> Device)"      -> HtoD, host  (AMD/ROCm cannot tell pageable from pinned)
//   "Memset (Device)"                   -> Memset, device
// Each row: count, bytes (args "bytes"), time (sum of durations), bandwidth = bytes / time.
// Pageable totals sum the pageable rows (a pageable async copy is staged and blocks the host).
// blocking_memcpy_calls: runtime calls cudaMemcpy* / hipMemcpy* without "Async" (synchronous
// copies; hipMemcpyWithStream is what PyTorch on ROCm uses for blocking copies).
// per_step: memcpy events (not memsets) per step.
#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/passes.h"

namespace ts::analysis {

namespace {


std::string_view trim(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  return v;
}

}  // namespace

std::pair<std::string, std::string> parse_copy_name(std::string_view name) {
  std::string direction = "other", kind = "unknown";
  std::string_view src, dst;
  const auto open = name.find('('), close = name.rfind(')');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    std::string_view inner = name.substr(open + 1, close - open - 1);
    auto arrow = inner.find("->");
    if (arrow != std::string_view::npos) {
      src = trim(inner.substr(0, arrow));
      dst = trim(inner.substr(arrow + 2));
    } else {
      src = dst = trim(inner);
    }
  }
  if (name.starts_with("Memset")) return {"Memset", src.empty() ? kind : lower(src)};
  if (name.starts_with("Memcpy ")) {
    std::string_view rest = name.substr(7);
    direction = std::string(trim(rest.substr(0, rest.find(' '))));
  }
  if (direction == "HtoD" || direction == "HtoH") kind = src.empty() ? kind : lower(src);
  else if (direction == "DtoH") kind = dst.empty() ? kind : lower(dst);
  else if (direction == "DtoD" || direction == "PtoP") kind = "device";
  return {direction, kind};
}

CopyStats analyse_copies(const TraceIndex& idx, const StepSummary& steps) {
  const auto& s = idx.s;
  CopyStats out;
  // A name is parsed once, to the row of its (direction, kind); copies add to it by name id.
  std::map<std::pair<std::string, std::string>, size_t> row_of_key;
  std::vector<CopyRow> rows;
  std::vector<int32_t> row_of_name(s.strings.size(), -1);
  int64_t memcpy_count = 0;
  for (const auto* list : {&idx.memcpys, &idx.memsets}) {
    for (uint32_t r : *list) {
      if (!idx.in_window(r)) continue;
      int32_t& k = row_of_name[s.name[r]];
      if (k < 0) {
        auto key = parse_copy_name(s.name_of(r));
        auto [it, fresh] = row_of_key.try_emplace(key, rows.size());
        if (fresh) rows.push_back(CopyRow{.direction = key.first, .kind = key.second});
        k = static_cast<int32_t>(it->second);
      }
      CopyRow& row = rows[static_cast<size_t>(k)];
      ++row.count;
      const auto* a = s.args_of(r);
      if (a && a->bytes > 0) row.bytes += a->bytes;
      row.time_ns += s.dur_ns[r];
      if (list == &idx.memcpys) ++memcpy_count;
    }
  }
  // In (direction, kind) order before the sort by time, as the map kept them (ties stay put).
  for (const auto& [key, k] : row_of_key) {
    CopyRow& row = rows[k];
    if (row.time_ns > 0) row.bandwidth_gbps = static_cast<double>(row.bytes) / row.time_ns;
    if (row.kind == "pageable") {
      out.pageable_count += row.count;
      out.pageable_bytes += row.bytes;
      out.pageable_time_ns += row.time_ns;
    }
    out.rows.push_back(row);
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const CopyRow& a, const CopyRow& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns
                                  : std::tie(a.direction, a.kind) < std::tie(b.direction, b.kind);
  });
  for (uint32_t r : idx.runtime)
    if (idx.flag(r, kBlockingMemcpy) && idx.in_window(r)) ++out.blocking_memcpy_calls;
  if (!steps.steps.empty()) out.per_step = static_cast<double>(memcpy_count) / steps.steps.size();
  return out;
}

}  // namespace ts::analysis
