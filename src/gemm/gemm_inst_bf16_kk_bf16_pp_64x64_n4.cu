// Kernel instance bf16_kk_bf16_pp_64x64_n4 (row of gemm_sm90_table.hpp): bf16 x @ w.t() -> bf16, ping-pong 64x64 tiles for M <= 64 (forced-only experiment, branch s44-m128-n4) (1x4 clusters along N share each A tile, as cuBLAS's small-M fp8 kernel).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_bf16_kk_bf16_pp_64x64_n4 =
    Sm90Gemm<cutlass::bfloat16_t, cutlass::bfloat16_t, /*A K-major*/ true, /*B K-major*/ true, cutlass::bfloat16_t,
             Shape<_64, _64, _64>, Shape<_1, _4, _1>, MainloopKind::kPingpong,
             /*stream-K*/ false>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(bf16_kk_bf16_pp_64x64_n4, Config_bf16_kk_bf16_pp_64x64_n4)
