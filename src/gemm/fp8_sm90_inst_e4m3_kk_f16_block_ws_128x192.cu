// Kernel instance e4m3_kk_f16_block_ws_128x192 (row of gemm_sm90_table.hpp): deepwell's fp8 main
// loop with DeepSeek block scales (1x128 of A, 128x128 of B, promoted every 128 of K) and fp16
// output, the only block-scaled path to an fp16 D (the CUTLASS block kernel writes bf16). The
// configuration of the bf16 row e4m3_kk_bf16_block_ws_128x192 (docs/perf-notes.md, session 9).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_f16_block_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleBlock1x128x128, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_f16_block_ws_128x192, Config_e4m3_kk_f16_block_ws_128x192)
