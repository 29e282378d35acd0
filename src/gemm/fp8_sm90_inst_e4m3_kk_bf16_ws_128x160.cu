// Kernel instance e4m3_kk_bf16_ws_128x160 (row of gemm_sm90_table.hpp): deepwell's fp8 main loop
// (fp8_sm90_kernel.cuh), e4m3 x e4m3 -> bf16, tensor or row/column scales in the epilogue, on
// 128x160 tiles with 5 stages (36 KB each; the 40 KB D tile goes out in 32-column TMA boxes).
// The shape rule picks it only where the 128x192 tiles leave the last wave mostly empty: at
// 4096x7168x16384, 11 waves of 160-column tiles against 10 of 192 (-8 % wave-columns) measured
// 0.92 -> 0.95x torch._scaled_mm; per flop its tiles are slower (8192^3: 0.80x against 0.95x;
// H100, session 13, docs/perf-notes.md). wgmma N = 80 (PromoteHalves' column halves) comes from
// CuTe's extended GMMA list, included in this file only.
#include "gemm/fp8_sm90_kernel.cuh"
// after the kernel header: the extended list builds on cute/arch/mma_sm90_gmma.hpp
#include "cute/arch/mma_sm90_gmma_ext.hpp"

namespace deepwell::matmul::sm90::fp8 {
template <>
struct WgmmaOp<80, false> {  // PromoteHalves: two 80-column halves
  using Op = cute::SM90::GMMA::MMA_64x80x32_F32E4M3E4M3_SS_TN<>;
};
using Config_e4m3_kk_bf16_ws_128x160 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 160, /*stages*/ 5, PromoteHalves,
              /*cluster M*/ 1, StoreTma, TilesSerial>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(e4m3_kk_bf16_ws_128x160, Config_e4m3_kk_bf16_ws_128x160)
