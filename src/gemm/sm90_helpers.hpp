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

}  // namespace deepwell::matmul::sm90
