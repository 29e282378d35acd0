// Kernel instance bf16_kk_bf16_pp_64x160 (row of gemm_sm90_table.hpp): bf16 x bf16 -> bf16, A and B K-major, ping-pong 64x160 tiles for small M (2x1 clusters share each B tile).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_bf16_kk_bf16_pp_64x160 =
    Sm90Gemm<cutlass::bfloat16_t, cutlass::bfloat16_t, /*A K-major*/ true, /*B K-major*/ true, cutlass::bfloat16_t,
             Shape<_64, _160, _64>, Shape<_2, _1, _1>, MainloopKind::kPingpong,
             /*stream-K*/ false>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(bf16_kk_bf16_pp_64x160, Config_bf16_kk_bf16_pp_64x160)
