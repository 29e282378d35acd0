// Memory-bound helper kernels of the CUDA GEMM path (sm90_helpers.cu).
#pragma once

#include <cstdint>

#include "deepwell/core.hpp"

namespace deepwell::matmul::sm90 {

// dst(b, c, r) = src(b, r, c) for 1-, 2- or 4-byte elements: src is (batch, rows, cols) with any
// strides, dst is (batch, cols, rows) with row stride dst_ld (>= rows) and unit column stride.
struct Transpose {
  int elem_bytes = 2;
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t src_row_stride = 0, src_col_stride = 0, src_batch_stride = 0;
  int64_t dst_ld = 0, dst_batch_stride = 0;
};
Status transpose(const Transpose& t, void* stream);

// d(b, i, j) += r(b, i, j), both of `dtype` (f32, f16, bf16).
struct AddInPlace {
  DType dtype = DType::kF32;
  void* d = nullptr;
  const void* r = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t d_rs = 0, d_cs = 0, d_bs = 0;
  int64_t r_rs = 0, r_cs = 0, r_bs = 0;
};
Status add_inplace(const AddInPlace& a, void* stream);

// dst(b, r, c) = bf16(decode(src(b, r, c)) * scale(r, c)) for e4m3 / e5m2 src (batch, rows, cols)
// with any strides; scale = 2^(ue8m0 scales[r * s_rs + (c / 32) * s_cs] - 127), or 1 without
// scales. dst is row-major with leading dimension ld. Exact whenever the scaled value is a normal
// bf16 (|x| in [2^-126, 2^128)): an fp8 mantissa fits in bf16's.
struct DecodeFp8 {
  const void* src = nullptr;
  bool e5m2 = false;
  int64_t batch = 1, rows = 0, cols = 0, rs = 0, cs = 0, bs = 0;
  const void* scales = nullptr;
  int64_t s_rs = 0, s_cs = 0;
  void* dst = nullptr;
  int64_t ld = 0, dst_bs = 0;
};
Status decode_fp8(const DecodeFp8& d, void* stream);

// An MXFP8 e4m3 operand (UE8M0 scale e(r, j) per 32 of K) recast for the block-scaled kernels,
// so the fp8 tensor cores run it with one promotion per 128 of K instead of per 32. Each
// sub-block's top T(r, j) = log2 of its largest decoded magnitude (binary exponent of the fp8
// amax, +1 above mantissa 1.75, plus e - 127). Then
//   rows side (kernel A): the 128-block's top B = max of its sub-blocks' T; block_scales = sfa
//     (kb128, round_up(rows, 4)) f32 = 2^(B - 8), M-major with leading dimension block_ld;
//   columns side (kernel B, each row of it a column of D): the row's top T_r = max over all of K
//     goes to row_scales = 2^(T_r - 8) (the epilogue's scale_n) and R(nb, kb) = max over the 128
//     rows of the block of T - T_r (<= 0) to block_scales = sfb (nb, kb128) f32 = 2^R; B = T_r + R.
// Every element is multiplied by the power of two 2^(e - 127 - B + 8) (the block's largest lands
// at <= 448) and rounded to e4m3 (RNE): exact wherever the result stays a normal e4m3 (>= 2^-6),
// i.e. for every element of magnitude >= 2^(B - 14); smaller ones round at e4m3's subnormal
// step, an absolute error <= 2^(B - 18). (2^B <= 1.15x the largest magnitude of the row's
// 128-block, rows side, or of the whole row, columns side.) NaN scales (0xff) make the row's
// block scale (rows side) or row scale (columns side) NaN, as the decoded operands' sums are.
// `exps` (columns side): workspace of rows + nb * kb128 + rows * kb32 int32 (T_r, R, then the
// tops).
struct MxToBlock {
  const void* src = nullptr;  // e4m3 (rows, cols), unit stride along cols, row stride rs
  int64_t rows = 0, cols = 0, rs = 0;
  const void* scales = nullptr;  // ue8m0 (rows, ceil(cols / 32)), strides s_rs, s_cs
  int64_t s_rs = 0, s_cs = 0;
  bool columns = false;
  void* dst = nullptr;  // e4m3 (rows, ld), ld a multiple of 16
  int64_t ld = 0;
  float* block_scales = nullptr;
  int64_t block_ld = 0;  // sfa: round_up(rows, 4); sfb: kb128
  float* row_scales = nullptr;  // columns side
  int32_t* exps = nullptr;      // columns side
};
// Both operands of one call (rows_side.columns false, columns_side.columns true): the columns
// side's exponent passes, then both converts in one grid.
Status mx_to_block(const MxToBlock& rows_side, const MxToBlock& columns_side, void* stream);

}  // namespace deepwell::matmul::sm90
