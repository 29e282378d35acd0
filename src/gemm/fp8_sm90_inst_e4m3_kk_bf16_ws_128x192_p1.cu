// Kernel instance e4m3_kk_bf16_ws_128x192_p1 (row of gemm_sm90_table.hpp; session 37 A/B only,
// forced only: choose_plan takes the group's first own row): e4m3_kk_bf16_ws_128x192 with the
// previous PromoteSerial, one promotion per 128 of K, against the table's one per 256.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_128x192_p1 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteSerial,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_128x192_p1, Config_e4m3_kk_bf16_ws_128x192_p1)
