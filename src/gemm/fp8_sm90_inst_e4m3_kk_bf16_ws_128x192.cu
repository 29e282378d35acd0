// Kernel instance e4m3_kk_bf16_ws_128x192 (row of gemm_sm90_table.hpp): deepwell's fp8 main loop
// (fp8_sm90_kernel.cuh), e4m3 x e4m3 -> bf16, tensor or row/column scales in the epilogue.
// 128x192 tiles (64x192 per math warpgroup: 96 + 96 accumulator registers, 5 stages): 8-10 %
// faster than 128x128 (fewer shared-memory bytes per MMA flop); docs/perf-notes.md.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 5, PromoteSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_128x192, Config_e4m3_kk_bf16_ws_128x192)
