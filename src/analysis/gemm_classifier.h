#pragma once
// Classifies a GPU kernel name as a GEMM/convolution/attention kernel and says which precision
// it computes in and whether it runs on Tensor Cores (AMD: matrix cores). Kernel names are the
// only trace evidence of precision: cuBLAS, cuBLASLt, CUTLASS, cuDNN, Triton and Tensile encode
// the element types in them. Table-driven; gemm_classifier.cpp lists the families with examples.
#include <string_view>

namespace ts::analysis {

enum class Precision { Unknown, FP64, FP32, TF32, BF16, FP16, FP8, INT8 };
const char* precision_name(Precision p);  // "fp32", "tf32", ..., "unknown"

struct GemmClass {
  bool gemm = false;         // a GEMM, convolution (implicit GEMM) or attention kernel
  Precision precision = Precision::Unknown;
  bool tensor_core = false;  // runs on Tensor Cores / matrix cores
  const char* family = "";   // which rule matched, e.g. "cublas-legacy", "xmma", "cutlass", "nvjet"
};

GemmClass classify_gemm_kernel(std::string_view name);

}  // namespace ts::analysis
