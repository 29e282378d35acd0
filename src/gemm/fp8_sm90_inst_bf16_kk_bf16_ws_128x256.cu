// Kernel instance bf16_kk_bf16_ws_128x256 (row of gemm_sm90_table.hpp): the own main loop
// (fp8_sm90_kernel.cuh) with bf16 operands, bf16 x bf16 -> bf16, A and B K-major (x @ w.t()):
// 128x256 tiles of 64 of K per stage (3 stages: the 64 KB D tile leaves room for no more), wgmma
// m64n256k16 straight into the fp32 accumulator (PromoteNone, one batch in flight), TMA-store
// epilogue with the GEMM's fused formula. choose_plan runs it where CUTLASS's cooperative 128x256
// would run data-parallel, or stream-K up to K = 8192: its main loop is as fast as cuBLAS's, and
// since the epilogue lost its per-pair column loads, 0.99-1.02x torch.matmul on those shapes
// (docs/perf-notes.md, GEMM sessions 35-36).
#include "gemm/fp8_sm90_kernel.cuh"

namespace deepwell::matmul::sm90::fp8 {
using Config_bf16_kk_bf16_ws_128x256 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 256, /*stages*/ 3, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerial, OutBf16, InBf16>;
// Its twin for calls with no activation, no source and no split tail (TilesSerialPlain).
using Plain_bf16_kk_bf16_ws_128x256 =
    Fp8Kernel</*B e5m2*/ false, ScaleTensorRow, /*block N*/ 256, /*stages*/ 3, PromoteNone,
              /*cluster M*/ 1, StoreTma, TilesSerialPlain, OutBf16, InBf16>;
}  // namespace deepwell::matmul::sm90::fp8

DW_SM90_FP8_INSTANCE_WITH_PLAIN(bf16_kk_bf16_ws_128x256, Config_bf16_kk_bf16_ws_128x256,
                                Plain_bf16_kk_bf16_ws_128x256)
