// Kernel instance f16_kn_f16_pp_64x64 (row of gemm_sm90_table.hpp): f16 x f16 -> f16, A K-major, B N-major (x @ w), ping-pong 64x64 tiles for small M (2x1 clusters share each B tile).
#include "gemm/sm90_gemm.cuh"

namespace deepwell::matmul::sm90 {
using Config_f16_kn_f16_pp_64x64 =
    Sm90Gemm<cutlass::half_t, cutlass::half_t, /*A K-major*/ true, /*B K-major*/ false, cutlass::half_t,
             Shape<_64, _64, _64>, Shape<_2, _1, _1>, MainloopKind::kPingpong,
             /*stream-K*/ false>;
}  // namespace deepwell::matmul::sm90

DW_SM90_GEMM_INSTANCE(f16_kn_f16_pp_64x64, Config_f16_kn_f16_pp_64x64)
