// Kernel instance e4m3_kk_bf16_128x64_n4 (row of gemm_sm90_table.hpp): e4m3 x e4m3 -> bf16, tensor or row/column scales in the epilogue, cooperative 128x64 tiles (both consumer warpgroups on one tile) in 1x4 clusters along N (each k-block of A multicast to four CTAs) for 65 <= M <= 128. Forced-only (experiment, branch s44-m128-n4).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_e4m3_kk_bf16_128x64_n4 =
    Sm90Gemm<cutlass::float_e4m3_t, cutlass::float_e4m3_t, /*A K-major*/ true, /*B K-major*/ true, cutlass::bfloat16_t,
             Shape<_128, _64, _128>, Shape<_1, _4, _1>, MainloopKind::kCooperative,
             /*stream-K*/ false>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(e4m3_kk_bf16_128x64_n4, Config_e4m3_kk_bf16_128x64_n4)
