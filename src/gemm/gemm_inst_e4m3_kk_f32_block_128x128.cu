// Kernel instance e4m3_kk_f32_block_128x128 (row of gemm_sm90_table.hpp): e4m3 x e4m3 -> f32,
// 1x128 x 128x128 block scales promoted in the main loop (the fp32 twin of the bf16 block row).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_e4m3_kk_f32_block_128x128 =
    Sm90Gemm<cutlass::float_e4m3_t, cutlass::float_e4m3_t, /*A K-major*/ true, /*B K-major*/ true, float,
             Shape<_128, _128, _128>, Shape<_1, _2, _1>, MainloopKind::kFp8BlockScaled,
             /*stream-K*/ true>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(e4m3_kk_f32_block_128x128, Config_e4m3_kk_f32_block_128x128)
