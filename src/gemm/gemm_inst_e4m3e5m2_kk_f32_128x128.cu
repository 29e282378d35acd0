// Kernel instance e4m3e5m2_kk_f32_128x128 (row of gemm_sm90_table.hpp): e4m3 x e5m2 -> f32, tensor
// or row/column scales in the epilogue (the fp32 twin of e4m3e5m2_kk_bf16_128x128).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_e4m3e5m2_kk_f32_128x128 =
    Sm90Gemm<cutlass::float_e4m3_t, cutlass::float_e5m2_t, /*A K-major*/ true, /*B K-major*/ true,
             float, Shape<_128, _128, _128>, Shape<_1, _2, _1>, MainloopKind::kCooperative,
             /*stream-K*/ true>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(e4m3e5m2_kk_f32_128x128, Config_e4m3e5m2_kk_f32_128x128)
