// The validated description of one quantize / dequantize call, shared by the CPU reference
// (reference.cpp) and the CUDA kernels (*_sm90.cu).
#pragma once

#include "deepwell/quant.hpp"
#include "quant/codec.hpp"

namespace deepwell::quant {

// Per-format constants.
struct FormatTraits {
  int block;         // scale block along K: 128, 32, 16; 0 = the whole row or tensor
  bool fp4;          // e2m1 elements
  bool byte_scales;  // ue8m0 / ue4m3 scales (MX, NVFP4): swizzle applies
  DType scale_dtype;
};

constexpr FormatTraits format_traits(QuantFormat f) {
  switch (f) {
    case QuantFormat::kFp8Tensor: return {0, false, false, DType::kF32};
    case QuantFormat::kFp8Row: return {0, false, false, DType::kF32};
    case QuantFormat::kFp8Block1x128: return {128, false, false, DType::kF32};
    case QuantFormat::kFp8Block128x128: return {128, false, false, DType::kF32};
    case QuantFormat::kMxfp8: return {32, false, true, DType::kUE8M0};
    case QuantFormat::kMxfp4: return {32, true, true, DType::kUE8M0};
    case QuantFormat::kNvfp4: return {16, true, true, DType::kUE4M3};
  }
  return {0, false, false, DType::kF32};
}

inline Elem elem_of(DType dt) {
  return dt == DType::kE5M2 ? Elem::kE5M2 : dt == DType::kE2M1 ? Elem::kE2M1 : Elem::kE4M3;
}

// A (rows, cols) view of a float tensor whose rows may unravel over several leading dimensions:
// element (r, c) is at row_offset(r) + c * col_stride (in elements).
struct Matrix {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  int32_t lead_ndim = 0;
  int64_t lead_shape[kMaxDims] = {}, lead_strides[kMaxDims] = {};
  int64_t col_stride = 1;

  int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int i = lead_ndim - 1; i >= 0; --i) {
      off += (r % lead_shape[i]) * lead_strides[i];
      r /= lead_shape[i];
    }
    return off;
  }
};

// One quantized output: `data` (rows, cols), rows `ld` codes apart, its scales in the layout of the
// format.
struct Target {
  Matrix x;              // the matrix quantized along its rows (x, or x^T for the transposed copy)
  int64_t rows2 = 0;     // kFp8Block128x128: rows per batch (x.shape[-2]); otherwise == x.rows
  uint8_t* data = nullptr;
  int64_t ld = 0;        // codes from one row of data to the next: x.cols (contiguous) or more
                         // (data_t's padded rows, 1-byte codes only)
  void* scales = nullptr;  // nullptr: kFp8Tensor's transposed copy (shares the tensor scale)
};

struct Problem {
  Device device{};
  QuantFormat format = QuantFormat::kMxfp8;
  ScaleRule rule = ScaleRule::kFloor;
  bool pow2 = false, swizzle = false;
  Elem elem = Elem::kE4M3;
  FormatTraits traits{};
  Target main;
  bool has_transposed = false;
  Target transposed;
  float* tensor_scale = nullptr;  // kFp8Tensor: == main.scales; kNvfp4: the tensor scale
  const float* given_amax = nullptr;  // the caller's amax (QuantizeArgs::amax), or null
};

struct DequantProblem {
  Device device{};
  QuantFormat format = QuantFormat::kMxfp8;
  bool swizzle = false;
  Elem elem = Elem::kE4M3;
  FormatTraits traits{};
  int64_t rows = 0, cols = 0, rows2 = 0;
  const uint8_t* data = nullptr;
  int64_t ld = 0;  // codes from one row of data to the next: cols, or more (padded 2-D fp8 data)
  const void* scales = nullptr;
  const float* tensor_scale = nullptr;
  void* out = nullptr;  // contiguous (rows, cols)
  DType out_dtype = DType::kF32;
};

// Number of scale columns of a row of `cols` elements.
inline int64_t scale_cols(const FormatTraits& t, int64_t cols) {
  return t.block == 0 ? 1 : (cols + t.block - 1) / t.block;
}

// Index of the scale of element (r, c) in the scale buffer of a (rows, cols) target.
DW_QHD int64_t scale_index(QuantFormat f, bool swizzle, int block, int64_t rows2, int64_t cols,
                           int64_t r, int64_t c) {
  if (f == QuantFormat::kFp8Tensor) return 0;
  if (f == QuantFormat::kFp8Row) return r;
  const int64_t C = (cols + block - 1) / block, g = c / block;
  if (f == QuantFormat::kFp8Block128x128) {
    const int64_t br = (rows2 + 127) / 128;
    return ((r / rows2) * br + (r % rows2) / 128) * C + g;
  }
  if (swizzle) return swizzled_scale_offset(r, g, C);
  return r * C + g;
}

// Bytes of the swizzled layout for `rows` x `C` scales.
inline int64_t swizzled_bytes(int64_t rows, int64_t C) {
  return ((rows + 127) / 128) * ((C + 3) / 4) * 512;
}

Status quantize_cpu(const Problem& p);
Status dequantize_cpu(const DequantProblem& p);
void swizzle_cpu(const uint8_t* in, uint8_t* out, int64_t rows, int64_t C, bool to_swizzled);

Status quantize_cuda(const Problem& p, const Context& ctx);
Status dequantize_cuda(const DequantProblem& p, const Context& ctx);
Status swizzle_cuda(const uint8_t* in, uint8_t* out, int64_t rows, int64_t C, bool to_swizzled,
                    Device device, const Context& ctx);

}  // namespace deepwell::quant
