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

}  // namespace deepwell::matmul::sm90
