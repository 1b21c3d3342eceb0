// One test per kernel family of the GEMM precision classifier; names are real kernel names
// from cuBLAS, cuBLASLt, CUTLASS, cuDNN, Triton and Tensile (several from the fixtures).
#include "analysis/gemm_classifier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ts::analysis {
namespace {

using P = Precision;

struct Case {
  std::string name;
  P precision;
  bool tensor_core;
  std::string family;
};

void check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    GemmClass g = classify_gemm_kernel(c.name);
    EXPECT_TRUE(g.gemm) << c.name;
    EXPECT_EQ(precision_name(g.precision), std::string(precision_name(c.precision))) << c.name;
    EXPECT_EQ(g.tensor_core, c.tensor_core) << c.name;
    EXPECT_EQ(std::string(g.family), c.family) << c.name;
  }
}

TEST(GemmClassifier, CublasLegacyVoltaTuringAmpere) {
  check({
      {"volta_sgemm_128x64_nn", P::FP32, false, "cublas-legacy"},
      {"volta_sgemm_64x64_nt", P::FP32, false, "cublas-legacy"},
      {"volta_h884gemm_64x64_ldg8_nn", P::FP16, true, "cublas-legacy"},
      {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", P::FP16, true, "cublas-legacy"},
      {"turing_h1688gemm_128x128_ldg8_tn", P::FP16, true, "cublas-legacy"},
      {"turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", P::FP16, true, "cublas-legacy"},
      {"ampere_sgemm_128x64_tn", P::FP32, false, "cublas-legacy"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", P::BF16, true, "cublas-legacy"},
      {"ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_tn", P::FP16, true, "cublas-legacy"},
      {"ampere_h16816gemm_256x128_ldg8_stages_32x3_nn", P::FP16, true, "cublas-legacy"},
      {"ampere_i16832gemm_int8_128x128_ldg16_stages_64x3_nt", P::INT8, true, "cublas-legacy"},
      {"maxwell_sgemm_128x64_nt", P::FP32, false, "cublas-legacy"},
      {"maxwell_hgemm_256x128_nn", P::FP16, false, "cublas-legacy"},
      {"volta_dgemm_64x64_nn", P::FP64, false, "cublas-legacy"},
  });
}

TEST(GemmClassifier, CudnnLegacyConvolutions) {
  check({
      {"volta_scudnn_128x64_relu_interior_nn_v1", P::FP32, false, "cublas-legacy"},
      {"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", P::FP32, false, "cublas-legacy"},
      {"volta_fp16_s884cudnn_fp16_256x128_ldg8_splitK_relu_f2f_exp_small_nhwc2nchw_tn_v1", P::FP16,
       true, "cublas-legacy"},
      {"turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", P::FP16, true,
       "cublas-legacy"},
      {"void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
       P::FP32, false, "cudnn"},
      {"void cudnn::cnn::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)",
       P::FP32, false, "cudnn"},
      {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)",
       P::FP32, false, "cudnn"},
  });
}

TEST(GemmClassifier, XmmaGemmAndImplicitGemmConvolutions) {
  check({
      {"sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_execute_kernel_trt",
       P::TF32, true, "xmma"},
      {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
       P::BF16, true, "xmma"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
       P::BF16, true, "xmma"},
      {"sm90_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x64_cgasize1x2x1_kernel", P::FP16, true,
       "xmma"},
      {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_kernel", P::FP8, true, "xmma"},
      {"sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64_kernel", P::INT8, true, "xmma"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
       P::TF32, true, "xmma"},
      {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_split_k_kernel_cudnn_train",
       P::TF32, true, "xmma"},
      {"sm86_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x32x64_stage5_warpsize2x1x1_g1_tensor16x8x16_kernel_cudnn",
       P::FP16, true, "xmma"},
      {"sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x64x32_kernel",
       P::BF16, true, "xmma"},
  });
}

TEST(GemmClassifier, Cutlass) {
  check({
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)",
       P::TF32, true, "cutlass"},
      {"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)",
       P::BF16, true, "cutlass"},
      {"cutlass_80_tensorop_h16816gemm_128x256_32x3_nn_align8", P::FP16, true, "cutlass"},
      {"cutlass_80_tensorop_i16832gemm_s8_128x256_64x3_tn_align16", P::INT8, true, "cutlass"},
      {"cutlass_75_tensorop_s1688gemm_f16_256x128_32x2_nt_align8", P::FP16, true, "cutlass"},
      {"void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)",
       P::FP32, false, "cutlass"},
      {"cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma",
       P::BF16, true, "cutlass"},
      {"cutlass_80_tensorop_d884gemm_64x32_16x4_nn_align1", P::FP64, true, "cutlass"},
      // Mangled cuDNN-internal CUTLASS implicit-GEMM convolution (from the NCCL fixture).
      {"_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgradOutputGradientTileAccessIteratorOptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloat32_tENS_9transform29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi128ELi32EEELi128ENSF_ILi8ELi4EEELi4EEENS_12AlignedArrayISC_Li4ELi16EEEEENSD_11threadblock25RegularTileAccessIteratorISB_SC_NS_6layout40ColumnMajorTensorOpMultiplicandCongruousILi32ELi32EEELi1ESI_Li16EEELNS_4arch14CacheOperation4KindE0ENS6_11threadblock9MmaPolicyINS6_4warp11MmaTensorOpINS7_ILi64ELi64ELi32EEE",
       P::TF32, true, "cutlass"},
  });
  // CUTLASS helpers that are not GEMMs.
  EXPECT_FALSE(classify_gemm_kernel("void cutlass_cudnn_train::Kernel<cutlass_cudnn_train::reduction::kernel::ReduceSplitK<cutlass_cudnn_train::MatrixShape<4, 128> > >(Params)").gemm);
}

TEST(GemmClassifier, NvjetHopperCublasLt) {
  check({
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", P::BF16, true, "nvjet"},
      {"nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN", P::BF16, true, "nvjet"},
      {"nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNN", P::FP16, true, "nvjet"},
      {"nvjet_sss_128x128_32x5_1x2_h_bz_NNT", P::TF32, true, "nvjet"},
      {"nvjet_qqtst_128x128_128x6_1x2_h_bz_coopA_NNT", P::FP8, true, "nvjet"},
  });
}

TEST(GemmClassifier, TritonTemplatesHaveNoDtypeInTheName) {
  check({
      {"triton_tem_fused_mm_0", P::Unknown, false, "triton"},
      {"triton_tem_fused_addmm_relu_1", P::Unknown, false, "triton"},
  });
  EXPECT_FALSE(classify_gemm_kernel("triton_poi_fused_add_cos_sin_0").gemm);
  EXPECT_FALSE(classify_gemm_kernel("triton_red_fused_native_layer_norm_0").gemm);
}

TEST(GemmClassifier, AttentionKernels) {
  check({
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)",
       P::BF16, true, "attention"},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
       P::FP16, true, "attention"},
  });
}

TEST(GemmClassifier, AmdTensile) {
  check({
      // From the MI250 fixture: fp32 on matrix cores (MFMA).
      {"Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128",
       P::FP32, true, "tensile"},
      {"Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x32_MI32x32x8_SN_LDSB1_AFC1", P::BF16,
       true, "tensile"},
      {"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1", P::FP16, true, "tensile"},
      {"Cijk_Ailk_Bjlk_SB_MT64x64x8_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1", P::FP32, false, "tensile"},
      {"Cijk_Ailk_Bljk_DB_MT64x64x16_MI16x16x4x1_SN_1LDSB0", P::FP64, true, "tensile"},
      {"Cijk_Ailk_Bljk_I8II_BH_MT128x128x64_MI32x32x16x1_SN", P::INT8, true, "tensile"},
      {"Cijk_Ailk_Bljk_F8F8S_BH_MT128x128x64_MI32x32x16_SN", P::FP8, true, "tensile"},
  });
}

TEST(GemmClassifier, SmallCublasKernels) {
  check({
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)",
       P::FP32, false, "cublas-small"},
      {"void splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasSplitKParams<float>, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, void*, long, float*, int*)",
       P::BF16, false, "cublas-small"},
  });
}

TEST(GemmClassifier, GenericFallbackAndNonGemms) {
  check({{"my_custom_gemm_bf16_kernel", P::BF16, true, "generic"},
         {"void sgemm_largek_lds64<true, true, 6, 3, 4, 5, 2, 66>(float*, float const*, float const*, int, int, int, int, int, int, float const*, float const*, float, float, int, int, int*, int*)",
          P::FP32, false, "generic"},
         {"matmul_kernel", P::Unknown, false, "generic"}});
  for (const char* n :
       {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        "void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)",
        "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)",
        // FBGEMM's non-GEMM kernels (from the trace_filter fixture).
        "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)",
        "void split_embedding_codegen_forward_unweighted_kernel<c10::Half, c10::Half, float, false, long, 2ul, 32ul>(at::GenericPackedTensorAccessor<c10::Half, 1ul, at::RestrictPtrTraits, long>, fbgemm_gpu::FixedDivisor)",
        "void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(float const*, float const*, int, int, unsigned char*, bool)",
        "Memcpy HtoD (Pageable -> Device)"})
    EXPECT_FALSE(classify_gemm_kernel(n).gemm) << n;
}

}  // namespace
}  // namespace ts::analysis
