// Kernel instance f16_kk_f16_ws_128x256 (row of gemm_sm90_table.hpp; branch f16-own, experiment,
// not yet run on a GPU): bf16_kk_bf16_ws_128x256 for fp16, fp16 x fp16 -> fp16, A and B K-major
// (x @ w.t()): the own main loop (fp8_sm90_kernel.cuh) with InF16 operands, wgmma m64n256k16 into
// the fp32 accumulator (PromoteNone), 3 stages, TMA-store epilogue. choose_plan would take it
// wherever the fp16 group's CUTLASS 128x256 runs data-parallel, as for bf16 (session 36: the own
// bf16 tile 0.99-1.02x torch.matmul on those shapes, CUTLASS's 0.93-0.99x).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_f16_kk_f16_ws_128x256 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 256, /*stages*/ 3, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutF16, InF16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE(f16_kk_f16_ws_128x256, Config_f16_kk_f16_ws_128x256)
