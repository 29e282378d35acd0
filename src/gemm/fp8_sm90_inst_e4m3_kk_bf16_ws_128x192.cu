// Kernel instance e4m3_kk_bf16_ws_128x192 (row of gemm_sm90_table.hpp): deepwell's fp8 main loop
// (fp8_sm90_kernel.cuh), e4m3 x e4m3 -> bf16, tensor or row/column scales in the epilogue.
// 128x192 tiles (64x192 per math warpgroup: 96 + 96 accumulator registers): 8-10 % faster than
// 128x128 (fewer shared-memory bytes per MMA flop). Epilogue through a 48 KB shared-memory D tile
// and TMA stores (StoreTma): 0.86-0.90x -> 0.89-0.98x torch._scaled_mm (H100) over the register
// epilogue; the D tile leaves room for 4 stages (5 measured no faster; 3 about 1 % slower).
// Overlapping the epilogue with the next tile's first k-block (TilesOverlapEpilogue) measured no
// gain and doubles the epilogue code, so the tiles run serially. docs/perf-notes.md.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
// Its twin for calls with no activation, no source and no split tail (TilesSerialPlain).
using Plain_e4m3_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerialPlain>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE_WITH_PLAIN(e4m3_kk_bf16_ws_128x192, Config_e4m3_kk_bf16_ws_128x192,
                                Plain_e4m3_kk_bf16_ws_128x192)
