// Kernel instance e4m3_kk_f16_block_ws_128x128 (row of gemm_sm90_table.hpp): deepwell's fp8 main
// loop with DeepSeek block scales (1x128 of A, 128x128 of B, promoted every 128 of K) and fp16
// output, the only block-scaled path to an fp16 D (the CUTLASS block kernel writes bf16). 128x128
// tiles with the overlapped promotion: the configuration measured 930-1052 TFLOP/s against the
// CUTLASS kernel's 1010-1092 with the bf16 register epilogue (docs/perf-notes.md, "deepwell's fp8
// main loop"); 5 stages and the TMA-store epilogue as the tensor/row rows.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_f16_block_ws_128x128 =
    Fp8Kernel</*B e5m2*/ false, ScaleBlock1x128x128, /*block N*/ 128, /*stages*/ 5,
              PromoteOverlapped, /*cluster M*/ 1, StoreTma, TilesSerial, OutF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_f16_block_ws_128x128, Config_e4m3_kk_f16_block_ws_128x128)
