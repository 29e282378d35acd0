// Low-precision formats: quantize, dequantize, scale-factor layouts, and a block-scaled GEMM
// reference. The exact rules are in docs/formats.md; in short:
//
//   format           elements        scales (for x of shape (..., K); K is the reduction dim)
//   kFp8Tensor       e4m3 | e5m2     f32 (1): amax(x) / max_normal
//   kFp8Row          e4m3 | e5m2     f32 (..., 1): amax(row) / max_normal
//   kFp8Block1x128   e4m3 | e5m2     f32 (..., ceil(K/128)): per 128 consecutive K of a row
//   kFp8Block128x128 e4m3 | e5m2     f32 (..., ceil(R/128), ceil(K/128)) over the last two dims
//   kMxfp8           e4m3 | e5m2     ue8m0 (..., K/32)                         (K % 32 == 0)
//   kMxfp4           e2m1            ue8m0 (..., K/32)                         (K % 32 == 0)
//   kNvfp4           e2m1            ue4m3 (..., K/16) and an f32 (1) tensor scale (K % 16 == 0)
//
// Element dtype is the dtype of the `data` tensor. FP32 scales are always >= 2^-126 (so that v /
// scale is finite); a NaN or Inf among the values a scale covers makes that scale NaN, and every
// element it covers decodes to NaN. MX and NVFP4 scales can be written in the 128x4 swizzled
// layout of Blackwell block-scaled MMA: shape (ceil(R/128), ceil(C/4), 32, 16) bytes, where R is
// the number of rows (the product of x's leading dims) and C = K / block; padding bytes are zero.
//
// The optional transposed copy (2-D x of shape (R, K) only) is quantize(x^T): data_t (K, R) with
// its scales along R, so one call serves both K-major uses of a weight (or the forward and the
// backward use of an activation). FP8 data_t may have padded rows (unit stride along R, rows
// ld >= R codes apart): with ld a multiple of 16 and a 16-byte aligned base, GEMMs' TMA loads
// can read it directly (deepwell::gemm_fp8, cuBLASLt); with ld a multiple of 32 the CUDA kernel
// writes whole 32-byte sectors (at 4097 x 8192, ld 4112 ran 12 % slower than 4128). Padding
// bytes are not written. The Python API pads to round_up(R, 32).
#pragma once

#include "deepwell/core.hpp"

namespace deepwell {

// The numeric values are part of the C ABI (deepwell.h, DW_QUANT_*).
enum class QuantFormat : int32_t {
  kFp8Tensor = 0,
  kFp8Row = 1,
  kFp8Block1x128 = 2,
  kFp8Block128x128 = 3,
  kMxfp8 = 4,
  kMxfp4 = 5,
  kNvfp4 = 6,
};

// How an MX scale is chosen (docs/formats.md): kFloor is the OCP rule (2^(floor(log2 amax) -
// emax_elem), may clip the block's largest element), kRceil the NVIDIA rule (2^ceil(log2(amax /
// max_normal)), never clips).
enum class ScaleRule : int32_t { kFloor = 0, kRceil = 1 };

DEEPWELL_API std::string_view quant_format_name(QuantFormat f);

struct QuantConfig {
  QuantFormat format = QuantFormat::kMxfp8;
  ScaleRule rule = ScaleRule::kFloor;  // MX formats only; must be kFloor for the others
  bool pow2_scales = false;            // FP32-scale formats only: scale rounded up to a power of 2
  bool swizzle = false;                // MX and NVFP4 only: scales in the 128x4 swizzled layout
};

struct Shape {
  int32_t ndim = 0;
  int64_t dims[kMaxDims] = {};
};

// Shapes and dtypes of quantize()'s outputs for an input of shape `x_shape`, so that callers can
// allocate them. data has x's shape (element dtype of the caller's choice); data_t is (K, R).
struct QuantShapes {
  Shape data, scales;
  DType scale_dtype = DType::kF32;  // kF32, kUE8M0 or kUE4M3
  bool has_tensor_scale = false;    // NVFP4: an f32 (1) tensor scale
  Shape data_t, scales_t;           // filled when `transpose`; scales_t.ndim == 0 for kFp8Tensor
};

DEEPWELL_API Status quantize_shapes(const QuantConfig& config, const Shape& x_shape, bool transpose,
                                    QuantShapes* out);

struct QuantizeArgs {
  TensorView x;            // f32, f16 or bf16, (..., K); CUDA: contiguous
  TensorView data;         // like x, dtype e4m3 / e5m2 (FP8 formats) or e2m1; contiguous
  TensorView scales;       // as quantize_shapes(); contiguous
  const TensorView* tensor_scale = nullptr;  // NVFP4: f32 (1); must be null otherwise
  const TensorView* data_t = nullptr;        // optional transposed copy (K, R); 2-D x only;
                                             // contiguous, or (FP8) rows ld >= R codes apart
  const TensorView* scales_t = nullptr;      // its scales; required with data_t except kFp8Tensor
  // kFp8Tensor and kNvfp4 only, optional: an f32 (1) tensor on x's device holding the amax to
  // scale by, known before the call (delayed scaling: an earlier step's amax; or reduced by the
  // kernel that produced x). The tensor scale is derived from |amax| by the same rule as from
  // x's own amax; elements above it saturate. Without it the amax is x's and x is read twice.
  const TensorView* amax = nullptr;
  QuantConfig config{};
};

// Writes data (and scales); no workspace needed. On CUDA the amax of kFp8Tensor and kNvfp4 is
// reduced in the tensor-scale output itself before the encoding pass (two passes over x), unless
// the caller passes it (`amax`: one pass).
DEEPWELL_API Status quantize(const QuantizeArgs& args, const Context& ctx = {});

struct DequantizeArgs {
  TensorView data;    // as written by quantize(): contiguous, or 2-D FP8 with padded rows
  TensorView scales;  // in the layout given by config.swizzle
  const TensorView* tensor_scale = nullptr;  // NVFP4 only
  TensorView out;     // f32, f16 or bf16, data's shape
  QuantConfig config{};  // format and swizzle are read; rule and pow2_scales are ignored
};

DEEPWELL_API Status dequantize(const DequantizeArgs& args, const Context& ctx = {});

// Converts 1-byte block scales between the row-major layout (..., C) and the swizzled layout
// (ceil(R/128), ceil(C/4), 32, 16), R = product of the leading dims. Padding bytes are zeroed.
DEEPWELL_API Status swizzle_scales(const TensorView& scales, const TensorView& out,
                                   const Context& ctx = {});
DEEPWELL_API Status unswizzle_scales(const TensorView& swizzled, const TensorView& out,
                                     const Context& ctx = {});

// Byte offset of scale (r, c) in the swizzled layout of an operand with C scale columns.
constexpr int64_t swizzled_scale_offset(int64_t r, int64_t c, int64_t C) {
  return ((r / 128) * ((C + 3) / 4) + c / 4) * 512 + (r % 32) * 16 + ((r / 32) % 4) * 4 + (c % 4);
}

// One quantized GEMM operand: data (rows, K) quantized along K, with its scales as quantize()
// wrote them.
struct ScaledOperand {
  TensorView data, scales;
  const TensorView* tensor_scale = nullptr;
  QuantConfig config{};
};

// Reference block-scaled GEMM, CPU only: D = alpha * dequant(A) @ dequant(B)^T with A (M, K) and
// B (N, K), both K-major as quantize() writes them; the operands are decoded to fp32 and
// multiplied by the fp32 reference GEMM. d: f32, f16 or bf16 (M, N).
struct ScaledGemmArgs {
  ScaledOperand a, b;
  TensorView d;
  float alpha = 1.0f;
};

DEEPWELL_API Status scaled_gemm_reference(const ScaledGemmArgs& args, const Context& ctx = {});

}  // namespace deepwell
