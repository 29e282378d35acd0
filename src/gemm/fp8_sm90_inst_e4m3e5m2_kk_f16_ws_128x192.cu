// Kernel instance e4m3e5m2_kk_f16_ws_128x192 (row of gemm_sm90_table.hpp): the
// e4m3e5m2_kk_bf16_ws_128x192 configuration with fp16 output (D, S and the biases in fp16): the
// only fp8 path from e4m3 x e5m2 operands to an fp16 D.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3e5m2_kk_f16_ws_128x192 =
    Fp8Kernel</*B e5m2*/ true, ScaleTensorRow, /*block N*/ 192, /*stages*/ 4, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3e5m2_kk_f16_ws_128x192, Config_e4m3e5m2_kk_f16_ws_128x192)
