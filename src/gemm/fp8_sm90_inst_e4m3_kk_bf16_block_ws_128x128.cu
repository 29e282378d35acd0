// Kernel instance e4m3_kk_bf16_block_ws_128x128 (row of gemm_sm90_table.hpp): deepwell's fp8 main
// loop (fp8_sm90_kernel.cuh), e4m3 x e4m3 -> bf16, 1x128 (A) x 128x128 (B) block scales promoted
// in the main loop, each warpgroup issuing k-block kb + 1 before promoting kb (PromoteOverlapped:
// 0.5-4 % faster than PromoteSerial here; 128x192 tiles were no faster; docs/perf-notes.md).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_block_ws_128x128 =
    Fp8Kernel</*B e5m2*/ false, ScaleBlock1x128x128, /*block N*/ 128, /*stages*/ 6, PromoteOverlapped>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_block_ws_128x128, Config_e4m3_kk_bf16_block_ws_128x128)
