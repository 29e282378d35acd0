// Kernel instance e4m3_kk_bf16_ws_128x128 (row of gemm_sm90_table.hpp): deepwell's fp8 main loop
// (fp8_sm90_kernel.cuh), e4m3 x e4m3 -> bf16, tensor or row/column scales in the epilogue.
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_128x128 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 128, /*stages*/ 6>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_128x128, Config_e4m3_kk_bf16_ws_128x128)
