// Kernel instance bf16_kk_bf16_ws_128x192 (row of gemm_sm90_table.hpp): the own main loop
// (fp8_sm90_kernel.cuh) with bf16 operands, bf16 x bf16 -> bf16, A and B K-major (x @ w.t()):
// 128x192 tiles of 64 of K per stage (4 stages: 40 KB each beside the 48 KB D tile), wgmma
// m64n192k16 straight into the fp32 accumulator (PromoteNone). For grids that 128x256 tiles leave
// at about 1.45 waves and 128x192 ones fill in whole waves (1536x4096: 264 tiles = 2 x 132 SMs;
// session 45: cuBLAS 68.6 us there against the table's 80.5; docs/perf-notes.md).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_bf16_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutBf16, InBf16>;
// Its twin for calls with no activation, no source and no split tail (TilesSerialPlain).
using Plain_bf16_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerialPlain, OutBf16, InBf16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE_WITH_PLAIN(bf16_kk_bf16_ws_128x192, Config_bf16_kk_bf16_ws_128x192,
                                Plain_bf16_kk_bf16_ws_128x192)
