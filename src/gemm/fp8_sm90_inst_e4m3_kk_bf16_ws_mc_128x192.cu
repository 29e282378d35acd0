// EXPERIMENT instance e4m3_kk_bf16_ws_mc_128x192 (row of gemm_sm90_table.hpp): 2-CTA clusters along M
// sharing the B tile through TMA multicast.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_mc_128x192 = Fp8Kernel<false, ScaleTensorRow, 192, 5, PromoteSerial, /*cluster M*/ 2>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_mc_128x192, Config_e4m3_kk_bf16_ws_mc_128x192)
