// Kernel instance bf16_kk_f16_128x128 (row of gemm_sm90_table.hpp): bf16 x bf16 -> f16, A and B
// K-major: fp16 output for bf16 operands and for MXFP8 (decoded to bf16 in the workspace).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_bf16_kk_f16_128x128 =
    Sm90Gemm<cutlass::bfloat16_t, cutlass::bfloat16_t, /*A K-major*/ true, /*B K-major*/ true, cutlass::half_t,
             Shape<_128, _128, _64>, Shape<_1, _2, _1>, MainloopKind::kCooperative,
             /*stream-K*/ true>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(bf16_kk_f16_128x128, Config_bf16_kk_f16_128x128)
