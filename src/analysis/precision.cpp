// Precision and Tensor Cores (docs/ANALYSES.md). Over the kernels starting inside the window:
//   each kernel name is classified by gemm_classifier.cpp (GEMM / convolution / attention, its
//   precision, Tensor Cores or not);
//   gemm_kernels, gemm_time_ns     count and summed duration of the GEMM-class kernels;
//   time_by_class_ns               that time by precision (fp32 tf32 bf16 fp16 fp8 int8 fp64 unknown);
//   tensor_core_share_pct          Tensor-Core GEMM time / GEMM time of known precision
//                                  (Triton templates do not name their dtype: left out);
//   fp32_share_pct                 fp32 GEMM time / GEMM time of known precision;
//   compute_capability             of the first device in deviceProperties.
// Shapes: half-precision (c10::Half / c10::BFloat16 in "Input type") aten::mm, bmm, addmm,
// baddbmm and aten::convolution calls (every linear/matmul/conv* reaches one of these, so each
// call counts once) whose GEMM dimensions are not multiples of 8 cannot use Tensor Cores fully
// (PyTorch's own profiler pattern): for matmuls, the last two dims of every tensor input; for
// convolutions, the input's channels (dim 1) and the weight's first two dims.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/gemm_classifier.h"
#include "analysis/passes.h"

namespace ts::analysis {

namespace {

// Parses "[[64, 2048], [2048, 1000], [], 1]" into shapes (non-list or nested entries -> {}).
std::vector<std::vector<int64_t>> parse_dims(std::string_view t) {
  std::vector<std::vector<int64_t>> out;
  size_t i = t.find('[');
  if (i == std::string_view::npos) return out;
  ++i;
  int depth = 1;
  std::vector<int64_t> cur;
  bool in_shape = false, nested = false;
  while (i < t.size() && depth > 0) {
    char c = t[i];
    if (c == '[') {
      ++depth;
      if (depth == 2) { in_shape = true; nested = false; cur.clear(); }
      else nested = true;
      ++i;
    } else if (c == ']') {
      if (depth == 2) { out.push_back(nested ? std::vector<int64_t>{} : cur); in_shape = false; }
      --depth;
      ++i;
    } else if (in_shape && depth == 2 && (c == '-' || (c >= '0' && c <= '9'))) {
      int64_t v = 0;
      bool neg = c == '-';
      if (neg) ++i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') v = v * 10 + (t[i++] - '0');
      cur.push_back(neg ? -v : v);
    } else if (depth == 1 && c != ',' && c != ' ') {
      // A scalar argument at top level: an empty shape.
      while (i < t.size() && t[i] != ',' && t[i] != ']') ++i;
      out.push_back({});
    } else {
      ++i;
    }
  }
  return out;
}

bool is_half_types(std::string_view t) {
  return t.find("c10::Half") != std::string_view::npos ||
         t.find("c10::BFloat16") != std::string_view::npos;
}

bool misaligned_dims(std::string_view op, const std::vector<std::vector<int64_t>>& shapes) {
  auto bad = [](int64_t d) { return d > 0 && d % 8 != 0; };
  if (op == "aten::convolution") {
    if (shapes.size() >= 1 && shapes[0].size() >= 2 && bad(shapes[0][1])) return true;
    if (shapes.size() >= 2 && shapes[1].size() >= 2 && (bad(shapes[1][0]) || bad(shapes[1][1])))
      return true;
    return false;
  }
  for (const auto& sh : shapes) {
    size_t from = sh.size() >= 2 ? sh.size() - 2 : 0;
    for (size_t k = from; k < sh.size(); ++k)
      if (bad(sh[k])) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<int64_t>> parse_input_dims(std::string_view text) { return parse_dims(text); }

PrecisionStats analyse_precision(const TraceIndex& idx) {
  const auto& s = idx.s;
  PrecisionStats out;
  std::unordered_map<uint32_t, GemmClass> cache;
  int64_t known_time = 0, tc_time = 0, fp32_time = 0;
  constexpr int kPrecisions = static_cast<int>(Precision::INT8) + 1;
  int64_t by_class[kPrecisions] = {};
  bool seen[kPrecisions] = {};
  for (uint32_t r : idx.kernels) {
    if (!idx.in_window(r)) continue;
    auto it = cache.find(s.name[r]);
    if (it == cache.end()) it = cache.emplace(s.name[r], classify_gemm_kernel(s.name_of(r))).first;
    const GemmClass& g = it->second;
    if (!g.gemm) continue;
    const int64_t d = s.dur_ns[r];
    ++out.gemm_kernels;
    out.gemm_time_ns += d;
    by_class[static_cast<int>(g.precision)] += d;
    seen[static_cast<int>(g.precision)] = true;
    if (g.precision != Precision::Unknown) {
      known_time += d;
      if (g.tensor_core) tc_time += d;
      if (g.precision == Precision::FP32) fp32_time += d;
    }
  }
  for (int p = 0; p < kPrecisions; ++p)
    if (seen[p]) out.time_by_class_ns[precision_name(static_cast<Precision>(p))] += by_class[p];
  if (known_time > 0) {
    out.tensor_core_share_pct = 100.0 * tc_time / known_time;
    out.fp32_share_pct = 100.0 * fp32_time / known_time;
  }
  if (!s.meta.devices.empty())
    out.compute_capability = s.meta.devices[0].compute_major * 10 + s.meta.devices[0].compute_minor;

  std::map<std::pair<std::string, std::string>, int64_t> issues;
  for (uint32_t r : idx.host_ops) {
    if (!idx.flag(r, kGemmOp) || !idx.in_window(r)) continue;
    std::string_view op = s.name_of(r);
    if (!is_half_types(s.strings.view(s.input_types[r]))) continue;
    ++out.half_gemm_calls;
    std::string_view dims = s.strings.view(s.input_dims[r]);
    if (misaligned_dims(op, parse_dims(dims))) {
      ++issues[{std::string(op), std::string(dims)}];
      ++out.misaligned_calls;
    }
  }
  for (auto& [key, count] : issues) out.misaligned.push_back({key.first, key.second, count});
  std::sort(out.misaligned.begin(), out.misaligned.end(),
            [](const PrecisionStats::ShapeIssue& a, const PrecisionStats::ShapeIssue& b) {
              return a.count != b.count ? a.count > b.count : a.dims < b.dims;
            });
  if (out.misaligned.size() > 20) out.misaligned.resize(20);
  return out;
}

}  // namespace ts::analysis
