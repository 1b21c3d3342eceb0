// GEMM / convolution precision classifier. Rules are tried in order; the first family whose
// `match` accepts the (lower-cased) name decides. Examples of each family are in
// tests/analysis/gemm_classifier_test.cpp.
//
// family          matches                                           examples
// tensile (AMD)   cijk_*                                            Cijk_Ailk_Bljk_BBS_BH_..._MT128x128x32_MI32x32x8_...
// nvjet           nvjet_*  (cuBLASLt, Hopper+)                      nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT, nvjet_sm90_hsh_...
// triton          triton_tem_*, triton_*mm*                         triton_tem_fused_mm_0, triton_tem_fused_addmm_1
// attention       flash_*, fmha*, *attention*                       flash_fwd_kernel<...cutlass::bfloat16_t...>, fmha_cutlassF_bf16_aligned_64x64_rf_sm80
// xmma            *xmma* with gemm/fprop/dgrad/wgrad/conv           sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_..., sm90_xmma_gemm_bf16bf16_bf16f32_f32_...,
//                                                                   sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_...
// cutlass         *cutlass* with gemm/conv/tensorop/simt/wmma       cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8,
//                                                                   cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4 (tf32), cutlass_80_simt_sgemm_...,
//                                                                   cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_..., mangled ImplicitGemmConvolution<...tfloat32_t...>
// cublas-legacy   <arch>_* with gemm/cudnn (arch: maxwell pascal    volta_sgemm_128x64_nn, volta_h884gemm_..., turing_fp16_s1688gemm_fp16_...,
//                 volta turing ampere ada hopper)                   ampere_bf16_s16816gemm_bf16_..., ampere_sgemm_..., volta_scudnn_128x64_relu_..., volta_fp16_s884cudnn_fp16_...
// cudnn           implicit/precomputed/explicit_convolve_*gemm,     cudnn::detail::implicit_convolve_sgemm<float, ...>, cudnn::cnn::wgrad_alg0_engine<float, ...>,
//                 dgrad/wgrad engines, winograd, grouped direct     cudnn::winograd_nonfused::winogradForwardData4x4<float, float>
// cublas-small    gemv*, gemmk1*, gemmsn*, splitkreduce*            gemv2T_kernel_val<int, int, float, ...>, splitKreduce_kernel<..., __nv_bfloat16, ...>
// generic         *gemm*, *matmul* (not counting "fbgemm")          anything else naming a GEMM
//
// Precision, when the family does not fix it, comes from element-type tokens in this priority:
// fp8 (e4m3 e5m2 fp8) > int8 (int8 i8i8 imma i8816 i16832) > tf32 (tf32 tfloat32 xf32) >
// bf16 (bf16 bfloat16) > fp16 (fp16 f16 half h884 h1688 h16816) > fp64 (f64 dgemm double d884 dmma) >
// fp32 (f32 sgemm scudnn float fp32).
// Tensor Cores: an MMA shape token (884 1688 16816 8816 16832), tensorop, wmma, hmma, imma, wgmma,
// or a precision that only runs on them (tf32, fp8; bf16/fp16/int8 in GEMM libraries since Volta
// use them unless the name says simt/hgemm).
#include "analysis/gemm_classifier.h"

#include <cctype>
#include <string>

namespace ts::analysis {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP64: return "fp64";
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::FP8: return "fp8";
    case Precision::INT8: return "int8";
    case Precision::Unknown: break;
  }
  return "unknown";
}

namespace {

using P = Precision;

bool has(const std::string& s, std::string_view tok) { return s.find(tok) != std::string::npos; }
bool has_any(const std::string& s, std::initializer_list<std::string_view> toks) {
  for (auto t : toks)
    if (has(s, t)) return true;
  return false;
}

// "f16" not as part of "bf16".
bool has_f16(const std::string& s) {
  for (size_t p = s.find("f16"); p != std::string::npos; p = s.find("f16", p + 1))
    if (p == 0 || s[p - 1] != 'b') return true;
  return false;
}

Precision precision_from_tokens(const std::string& s) {
  if (has_any(s, {"e4m3", "e5m2", "fp8", "f8f8"})) return P::FP8;
  if (has_any(s, {"int8", "i8i8", "imma", "i8816", "i16832", "i8832", "_i8_", "_s8_"})) return P::INT8;
  if (has_any(s, {"tf32", "tfloat32", "xf32"})) return P::TF32;
  if (has_any(s, {"bf16", "bfloat16"})) return P::BF16;
  if (has_f16(s) || has_any(s, {"fp16", "half", "h884", "h1688", "h16816", "hgemm"})) return P::FP16;
  if (has_any(s, {"f64", "dgemm", "double", "d884", "d16816", "dmma", "zgemm"})) return P::FP64;
  if (has_any(s, {"f32", "sgemm", "scudnn", "float", "fp32", "cgemm"})) return P::FP32;
  return P::Unknown;
}

bool has_mma_shape(const std::string& s) {
  // [hsidc]884, 1688, 16816, 8816, 16832 followed by gemm/cudnn (cuBLAS/cuDNN/CUTLASS MMA kernels).
  for (std::string_view shape : {"884gemm", "1688gemm", "16816gemm", "8816gemm", "16832gemm",
                                 "884cudnn", "1688cudnn", "16816cudnn", "8816cudnn", "16832cudnn"})
    if (has(s, shape)) return true;
  return false;
}

bool tc_tokens(const std::string& s) {
  return has_mma_shape(s) || has_any(s, {"tensorop", "tensor_op", "wmma", "hmma", "imma", "wgmma",
                                        "mmatensorop", "tensor16x8", "_tensor", "dmma"});
}

bool tc_precision(P p) {
  return p == P::TF32 || p == P::BF16 || p == P::FP16 || p == P::FP8 || p == P::INT8;
}

GemmClass make(const char* family, P p, bool tc) { return {true, p, tc, family}; }

// Token after a prefix, up to the next '_' (or end).
std::string token_after(const std::string& s, size_t pos) {
  size_t e = s.find('_', pos);
  return s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
}

GemmClass tensile(const std::string& s) {
  // Cijk_<A layout>_<B layout>_<types>_...: first letter of the types token is the input type.
  size_t pos = 0;
  for (int i = 0; i < 3 && pos != std::string::npos; ++i) {
    pos = s.find('_', pos);
    if (pos != std::string::npos) ++pos;
  }
  std::string t = pos == std::string::npos ? "" : token_after(s, pos);
  P p = P::Unknown;
  if (!t.empty()) {
    if (t.find("f8") != std::string::npos || t.find("b8") != std::string::npos) p = P::FP8;
    else if (t[0] == 'i') p = P::INT8;
    else if (t[0] == 'b') p = P::BF16;
    else if (t[0] == 'h') p = P::FP16;
    else if (t[0] == 's' || t[0] == 'c') p = has(s, "xf32") ? P::TF32 : P::FP32;
    else if (t[0] == 'd' || t[0] == 'z') p = P::FP64;
  }
  // _MI<m>x<n>x<k>: a matrix-core (MFMA) instruction.
  bool mfma = false;
  for (size_t q = s.find("_mi"); q != std::string::npos; q = s.find("_mi", q + 1))
    if (q + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[q + 3]))) mfma = true;
  return make("tensile", p, mfma);
}

GemmClass nvjet(const std::string& s) {
  size_t pos = 6;  // after "nvjet_"
  if (s.compare(pos, 2, "sm") == 0 && pos + 2 < s.size() &&
      std::isdigit(static_cast<unsigned char>(s[pos + 2]))) {
    size_t e = s.find('_', pos);
    pos = e == std::string::npos ? s.size() : e + 1;
  }
  std::string t = token_after(s, pos);
  P p = precision_from_tokens(s);
  if (p == P::Unknown || p == P::FP32) {
    // Type letters: t = bf16, h = fp16, s = fp32 data on Tensor Cores (tf32), q/e = fp8, i = int8.
    char c = t.empty() ? '?' : t[0];
    p = c == 't' ? P::BF16 : c == 'h' ? P::FP16 : c == 's' ? P::TF32 : (c == 'q' || c == 'e') ? P::FP8
        : c == 'i' ? P::INT8 : P::Unknown;
  }
  return make("nvjet", p, true);
}

GemmClass cublas_legacy(const std::string& s) {
  P p = precision_from_tokens(s);
  const bool mma = has_mma_shape(s) || has_any(s, {"hmma", "imma"});
  if (mma && (p == P::FP32 || p == P::Unknown)) {
    // An MMA kernel with no other element type: sNNNN on Ampere with fp32 data is tf32.
    p = P::TF32;
  }
  return make("cublas-legacy", p, mma || (tc_precision(p) && !has(s, "hgemm")));
}

bool is_arch_prefixed(const std::string& s) {
  for (std::string_view arch : {"maxwell_", "pascal_", "volta_", "turing_", "ampere_", "ada_",
                                "hopper_", "kepler_", "cudnn_infer_volta_", "cudnn_infer_ampere_",
                                "cudnn_infer_turing_"})
    if (s.starts_with(arch)) return true;
  return false;
}

}  // namespace

GemmClass classify_gemm_kernel(std::string_view name) {
  std::string s(name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.starts_with("void ")) s.erase(0, 5);

  if (s.starts_with("cijk_")) return tensile(s);
  if (s.starts_with("nvjet_")) return nvjet(s);
  if (s.starts_with("triton_")) {
    if (s.starts_with("triton_tem_") || has_any(s, {"_mm_", "_mm", "bmm", "addmm", "matmul"}))
      return make("triton", P::Unknown, false);
    return {};
  }
  if (has_any(s, {"flash_fwd", "flash_bwd", "flash::", "flash_attn", "fmha", "attention_kernel",
                  "efficient_attention", "cudnn_sdpa", "sdpa_"})) {
    P p = precision_from_tokens(s);
    return make("attention", p, tc_precision(p) || tc_tokens(s));
  }
  if (has(s, "xmma") && has_any(s, {"gemm", "fprop", "dgrad", "wgrad", "conv"})) {
    P p = precision_from_tokens(s);
    return make("xmma", p, tc_precision(p) || p == P::FP64);
  }
  if (has(s, "cutlass") && !has(s, "reducesplitk") &&
      has_any(s, {"gemm", "conv", "tensorop", "simt", "wmma"})) {
    const bool simt = has(s, "simt");
    const bool tc = !simt && (tc_tokens(s) || has(s, "sm90") || has(s, "cutlass3x"));
    P p = precision_from_tokens(s);
    if (tc && (p == P::Unknown || p == P::FP32) && !has(s, "f32_f32_f32")) {
      // cutlass_80_tensorop_s1688gemm_*: fp32 data on Tensor Cores = tf32.
      p = P::TF32;
    }
    return make("cutlass", p, tc);
  }
  if (is_arch_prefixed(s) && has_any(s, {"gemm", "cudnn"})) return cublas_legacy(s);
  if (has_any(s, {"convolve_sgemm", "convolve_hgemm", "convolve_dgemm", "conv2d_grouped_direct",
                  "dgrad_engine", "wgrad_alg", "dgrad2d_alg", "dgrad_alg", "winograd", "scudnn"})) {
    P p = precision_from_tokens(s);
    return make("cudnn", p, tc_tokens(s));
  }
  if (s.starts_with("gemv") || s.starts_with("gemmk1") || s.starts_with("gemmsn") ||
      s.starts_with("splitkreduce") || has(s, "::gemv")) {
    return make("cublas-small", precision_from_tokens(s), false);
  }
  // "fbgemm" (FBGEMM's namespace, e.g. its embedding and quantisation kernels) is a library
  // name, not a GEMM; its real GEMMs are CUTLASS kernels, matched above.
  std::string rest = s;
  for (size_t p = rest.find("fbgemm"); p != std::string::npos; p = rest.find("fbgemm", p))
    rest.replace(p, 6, "fb");
  if (has_any(rest, {"gemm", "matmul"})) {
    P p = precision_from_tokens(s);
    return make("generic", p, tc_tokens(s) || tc_precision(p));
  }
  return {};
}

}  // namespace ts::analysis
