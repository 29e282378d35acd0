// Kernel instance f16_kk_f16_ws_128x256 (row of gemm_sm90_table.hpp): bf16_kk_bf16_ws_128x256
// for fp16, fp16 x fp16 -> fp16, A and B K-major (x @ w.t()): the own main loop
// (fp8_sm90_kernel.cuh) with InF16 operands, wgmma m64n256k16 into the fp32 accumulator
// (PromoteNone), 3 stages, TMA-store epilogue. choose_plan takes it wherever the fp16 group's
// CUTLASS 128x256 would run data-parallel, as for bf16 (H100, session 37, x torch.matmul, own /
// CUTLASS: 16384x28672x4096 0.990 / 0.861, 8192^3 1.021 / 0.979, 4096x57344x8192 1.006 / 0.966).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_f16_kk_f16_ws_128x256 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 256, /*stages*/ 3, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutF16, InF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(f16_kk_f16_ws_128x256, Config_f16_kk_f16_ws_128x256)
