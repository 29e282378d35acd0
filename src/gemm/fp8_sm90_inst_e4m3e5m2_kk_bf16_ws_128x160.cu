// Kernel instance e4m3e5m2_kk_bf16_ws_128x160 (row of gemm_sm90_table.hpp): the
// e4m3_kk_bf16_ws_128x160 configuration with an e5m2 B operand (the E4M3 x E5M2 wgmma), tensor or
// row/column scales, bf16 output; 5 stages, 32-column TMA-store boxes. Like the e4m3 row, the
// shape rule picks it only where the 128x192 tiles leave the last wave mostly empty (>= 8 % fewer
// wave-columns; of the benchmark's shapes, 4096x7168x16384). wgmma N = 80 (PromoteHalves' column
// halves) comes from CuTe's extended GMMA list, included in this file only.
#include "gemm/fp8_sm90_kernel.cuh"
// after the kernel header: the extended list builds on cute/arch/mma_sm90_gmma.hpp
#include "cute/arch/mma_sm90_gmma_ext.hpp"

namespace deepwell::matmul::sm90::fp8 {
template <>
struct WgmmaOp<80, true> {  // PromoteHalves: two 80-column halves
  using Op = cute::SM90::GMMA::MMA_64x80x32_F32E4M3E5M2_SS_TN<>;
};
using Config_e4m3e5m2_kk_bf16_ws_128x160 =
    Fp8Kernel</*B e5m2*/ true, ScaleTensorRow, /*block N*/ 160, /*stages*/ 5, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3e5m2_kk_bf16_ws_128x160, Config_e4m3e5m2_kk_bf16_ws_128x160)
