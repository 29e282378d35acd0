// Kernel instance bf16_kn_bf16_pp_128x128 (row of gemm_sm90_table.hpp): bf16 x bf16 -> bf16, A K-major, B N-major (x @ w), ping-pong (one 128x128 tile per consumer warpgroup).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_bf16_kn_bf16_pp_128x128 =
    Sm90Gemm<cutlass::bfloat16_t, cutlass::bfloat16_t, /*A K-major*/ true, /*B K-major*/ false, cutlass::bfloat16_t,
             Shape<_128, _128, _64>, Shape<_2, _1, _1>, MainloopKind::kPingpong,
             /*stream-K*/ false>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(bf16_kn_bf16_pp_128x128, Config_bf16_kn_bf16_pp_128x128)
