// EXPERIMENT instance e4m3_kk_bf16_ws_ov_128x128 (row of gemm_sm90_table.hpp).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_e4m3_kk_bf16_ws_ov_128x128 = Fp8Kernel<false, ScaleTensorRow, 128, 6, PromoteOverlapped>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_ov_128x128, Config_e4m3_kk_bf16_ws_ov_128x128)
