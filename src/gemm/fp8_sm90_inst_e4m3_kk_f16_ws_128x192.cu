// Kernel instance e4m3_kk_f16_ws_128x192 (row of gemm_sm90_table.hpp): the e4m3_kk_bf16_ws_128x192
// configuration with fp16 output (D, S and the biases in fp16): tensor or row/column scales, the
// only fp8 path to an fp16 D (no CUTLASS fp8 instance has one). Same tiles, stages and epilogue
// as the bf16 row, whose measurements apply (docs/perf-notes.md, "deepwell's fp8 main loop").
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_f16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_f16_ws_128x192, Config_e4m3_kk_f16_ws_128x192)
