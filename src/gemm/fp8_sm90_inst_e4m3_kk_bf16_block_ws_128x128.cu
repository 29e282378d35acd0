// Kernel instance e4m3_kk_bf16_block_ws_128x128 (row of gemm_sm90_table.hpp): deepwell's fp8 main
// loop with DeepSeek block scales at 128x128 tiles (one B scale block per tile), bf16 out. The
// plan takes it where the 128x192 grid would be much emptier than CUTLASS's 128x128 one and
// CUTLASS would run data-parallel: the same grid on the own loop (H100, session 39, x
// torch._scaled_mm: 1024x4096x4096 0.800 against CUTLASS's 0.716; docs/perf-notes.md). 5 stages
// (32.5 KB each) beside the 32 KB D tile.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_block_ws_128x128 =
    Fp8Kernel</*B e5m2*/ false, ScaleBlock1x128x128, /*block N*/ 128, /*stages*/ 5, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_block_ws_128x128, Config_e4m3_kk_bf16_block_ws_128x128)
