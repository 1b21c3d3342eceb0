// tensor-core-shapes: half-precision GEMMs whose dimensions are not multiples of 8 cannot use
// the Tensor Cores at full rate (NVIDIA's "Matrix Multiplication Background" guide:
// dimensions multiples of 8 for fp16/bf16; PyTorch's pattern matcher: half-precision matmul dims not multiples of 8).
// Evidence: the trace's misaligned half-precision GEMM calls (needs record_shapes).
#include <algorithm>
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/rules/rule.h"

namespace ts::diagnose::rules {

std::optional<Finding> tensor_core_shapes(const Evidence& ev) {
  if (!ev.trace || ev.trace->precision.misaligned_calls <= 0) return std::nullopt;
  const auto& p = ev.trace->precision;
  Finding f = make("tensor-core-shapes", Bottleneck::Compute, "trace");
  add(f, "misaligned_calls", p.misaligned_calls, "count");
  add(f, "misaligned_shapes", p.misaligned.size(), "count");
  std::string shapes;
  for (size_t i = 0; i < p.misaligned.size() && i < 3; ++i)
    shapes += fmt::format("{}{} {} (x{})", i ? "; " : "", p.misaligned[i].op, p.misaligned[i].dims, p.misaligned[i].count);
  // Padding gains are shape-specific; a small share unless measured.
  double share = ev.trace->precision.gemm_time_ns > 0 && ev.trace->steps.total_ns > 0
                     ? double(ev.trace->precision.gemm_time_ns) / ev.trace->steps.total_ns
                     : 0.1;
  f.recoverable_fraction = std::clamp(0.1 * share, 0.0, 0.2);
  f.severity = Severity::Low;
  f.confidence = 0.7;
  f.title = fmt::format("Tensor-Core-unfriendly shapes: {} half-precision GEMM calls with dims not multiples of 8", p.misaligned_calls);
  f.gain = fmt::format("padded shapes run these GEMMs at full Tensor Core rate: {}", gain_text(f.recoverable_fraction));
  f.explanation =
      "Tensor Cores work on tiles: in fp16/bf16 a GEMM whose M, N or K is not a multiple of 8 falls "
      "back to slower kernels or pads internally. The shapes seen: " + shapes +
      ". Typical culprits are vocabulary sizes, hidden sizes and batch sizes like 50257, 1000 or 30.";
  f.fix = "Pad the odd dimension up to a multiple of 8 (64 is better): vocabulary, hidden size, batch size.";
  f.fix_code =
      "vocab = (vocab + 63) // 64 * 64          # e.g. 50257 -> 50304\n"
      "model = GPT(vocab_size=vocab, ...)";
  return f;
}

}  // namespace ts::diagnose::rules
