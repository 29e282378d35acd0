// Kernel instance e4m3e5m2_kk_bf16_ws_128x192 (row of gemm_sm90_table.hpp): the
// e4m3_kk_bf16_ws_128x192 configuration with an e5m2 B operand (the E4M3 x E5M2 wgmma), tensor or
// row/column scales, bf16 output. It replaces the CUTLASS e4m3e5m2 kernel wherever that one would
// run data-parallel, as the e4m3 row does (0.72-0.76x -> 0.89-0.98x torch._scaled_mm for e4m3).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3e5m2_kk_bf16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ true, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3e5m2_kk_bf16_ws_128x192, Config_e4m3e5m2_kk_bf16_ws_128x192)
