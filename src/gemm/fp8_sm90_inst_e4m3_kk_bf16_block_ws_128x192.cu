// EXPERIMENT instance e4m3_kk_bf16_block_ws_128x192 (row of gemm_sm90_table.hpp).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_block_ws_128x192 = Fp8Kernel<false, ScaleBlock1x128x128, 192, 5, PromoteSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_block_ws_128x192, Config_e4m3_kk_bf16_block_ws_128x192)
