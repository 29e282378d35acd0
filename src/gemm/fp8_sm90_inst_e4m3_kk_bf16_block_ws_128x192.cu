// Kernel instance e4m3_kk_bf16_block_ws_128x192 (row of gemm_sm90_table.hpp): deepwell's fp8 main
// loop with DeepSeek block scales (1x128 of A, 128x128 of B, promoted every 128 of K), bf16 out.
// 128x192 tiles: a tile spans two 128-column B scale blocks; which one each 8-column chunk takes
// is fixed at compile time but for one band chosen once per k-block (fp8_sm90_mainloop.cuh,
// promote_range), so a k-block's promotion is one FFMA per accumulator. H100, session 39 suite:
// 8192^3 1251 TFLOP/s (torch's cuBLAS blockwise 1121); where its grid is much emptier than a
// 128x128 one, the plan takes the 128x128 rows instead (gemm_sm90_table.hpp).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_block_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleBlock1x128x128, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_block_ws_128x192, Config_e4m3_kk_bf16_block_ws_128x192)
