// One test per validation rule of quantize, dequantize, quantize_shapes, the scale-layout
// conversions and the block-scaled GEMM reference.
#include "deepwell/quant.hpp"
#include "helpers.hpp"

namespace {

using namespace deepwell;

constexpr int64_t R = 64, K = 64;

void expect_error(const Status& s, StatusCode code, const std::string& arg,
                  const std::string& phrase) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find("argument '" + arg + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(phrase), std::string::npos) << s.message();
}

// A valid MXFP8 call with a transposed copy; each test breaks one thing.
struct Q {
  alignas(64) float x[R * K] = {};
  alignas(64) uint8_t data[R * K], data_t[R * K], scales[R * K / 32], scales_t[R * K / 32];
  alignas(64) float f32s[R * K], ts[1];
  TensorView vts, vdt, vst;
  QuantizeArgs a;
  Q() {
    a.x = TensorView::contiguous(x, DType::kF32, {R, K});
    a.data = TensorView::contiguous(data, DType::kE4M3, {R, K});
    a.scales = TensorView::contiguous(scales, DType::kUE8M0, {R, K / 32});
    vdt = TensorView::contiguous(data_t, DType::kE4M3, {K, R});
    vst = TensorView::contiguous(scales_t, DType::kUE8M0, {K, R / 32});
    vts = TensorView::contiguous(ts, DType::kF32, {1});
    a.data_t = &vdt;
    a.scales_t = &vst;
    a.config.format = QuantFormat::kMxfp8;
  }
  // Switch to NVFP4 (e2m1 data, ue4m3 scales per 16, tensor scale), without the transposed copy.
  void nvfp4() {
    a.config.format = QuantFormat::kNvfp4;
    a.data.dtype = DType::kE2M1;
    a.scales = TensorView::contiguous(scales, DType::kUE4M3, {R, K / 16});
    a.tensor_scale = &vts;
    a.data_t = a.scales_t = nullptr;
  }
  // Switch to 1x128 FP8 (f32 scales), without the transposed copy.
  void block1x128() {
    a.config.format = QuantFormat::kFp8Block1x128;
    a.scales = TensorView::contiguous(f32s, DType::kF32, {R, 1});
    a.data_t = a.scales_t = nullptr;
  }
  Status run() { return quantize(a); }
};

TEST(QuantValidation, ValidCallsSucceed) {
  Q q;
  EXPECT_TRUE(q.run().ok()) << q.run().message();
  q.a.scales.dtype = DType::kU8;  // raw bytes accepted for 1-byte scales
  q.vst.dtype = DType::kU8;
  EXPECT_TRUE(q.run().ok());
  Q n;
  n.nvfp4();
  EXPECT_TRUE(n.run().ok()) << n.run().message();
  Q b;
  b.block1x128();
  EXPECT_TRUE(b.run().ok()) << b.run().message();
}

TEST(QuantValidation, NullInput) {
  Q q;
  q.a.x.data = nullptr;
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "non-null");
}

TEST(QuantValidation, InputDtype) {
  Q q;
  q.a.x.dtype = DType::kI32;
  expect_error(q.run(), StatusCode::kInvalidDType, "x", "f32, f16 or bf16");
}

TEST(QuantValidation, UnknownFormat) {
  Q q;
  q.a.config.format = static_cast<QuantFormat>(7);
  expect_error(q.run(), StatusCode::kInvalidArgument, "format", "mxfp8");
}

TEST(QuantValidation, UnknownRule) {
  Q q;
  q.a.config.rule = static_cast<ScaleRule>(2);
  expect_error(q.run(), StatusCode::kInvalidArgument, "rule", "floor or rceil");
}

TEST(QuantValidation, RceilOnlyForMx) {
  Q q;
  q.block1x128();
  q.a.config.rule = ScaleRule::kRceil;
  expect_error(q.run(), StatusCode::kInvalidArgument, "rule", "floor for fp8_block1x128");
}

TEST(QuantValidation, Pow2OnlyForFp32Scales) {
  Q q;
  q.a.config.pow2_scales = true;
  expect_error(q.run(), StatusCode::kInvalidArgument, "pow2_scales", "false for mxfp8");
}

TEST(QuantValidation, SwizzleOnlyForByteScales) {
  Q q;
  q.block1x128();
  q.a.config.swizzle = true;
  expect_error(q.run(), StatusCode::kInvalidArgument, "swizzle", "only MX and NVFP4");
}

TEST(QuantValidation, InputRank) {
  Q q;
  q.a.x.ndim = 0;
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "1 to 8 dimensions");
  Q b;
  b.block1x128();
  b.a.config.format = QuantFormat::kFp8Block128x128;
  b.a.x = TensorView::contiguous(b.x, DType::kF32, {K});
  expect_error(b.run(), StatusCode::kInvalidArgument, "x", "2 to 8 dimensions for fp8_block128x128");
}

TEST(QuantValidation, MxNeedsKMultipleOf32) {
  Q q;
  q.a.x = TensorView::contiguous(q.x, DType::kF32, {R, 48});
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "multiple of 32 for mxfp8");
}

TEST(QuantValidation, Nvfp4NeedsKMultipleOf16) {
  Q q;
  q.nvfp4();
  q.a.x = TensorView::contiguous(q.x, DType::kF32, {R, 40});
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "multiple of 16 for nvfp4");
}

TEST(QuantValidation, DataDtypeForFp8Formats) {
  Q q;
  q.a.data.dtype = DType::kE2M1;
  expect_error(q.run(), StatusCode::kInvalidDType, "data", "e4m3 or e5m2");
}

TEST(QuantValidation, DataDtypeForFp4Formats) {
  Q q;
  q.nvfp4();
  q.a.data.dtype = DType::kE4M3;
  expect_error(q.run(), StatusCode::kInvalidDType, "data", "e2m1");
}

TEST(QuantValidation, DataDevice) {
  Q q;
  q.a.data.device = {DeviceType::kCUDA, 0};
  expect_error(q.run(), StatusCode::kInvalidArgument, "data", "on cpu");
}

TEST(QuantValidation, DataShape) {
  Q q;
  q.a.data = TensorView::contiguous(q.data, DType::kE4M3, {R, K - 1});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data", "shape [64, 64]");
}

TEST(QuantValidation, DataContiguous) {
  Q q;
  q.a.data = TensorView::strided(q.data, DType::kE4M3, {R, K}, {1, R});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data", "contiguous");
}

TEST(QuantValidation, ScalesDtype) {
  Q q;
  q.a.scales.dtype = DType::kF32;
  expect_error(q.run(), StatusCode::kInvalidDType, "scales", "ue8m0 or u8");
}

TEST(QuantValidation, ScalesShape) {
  Q q;
  q.a.scales = TensorView::contiguous(q.scales, DType::kUE8M0, {R, K / 16});
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales", "shape [64, 2]");
}

TEST(QuantValidation, SwizzledScalesShape) {
  Q q;
  q.a.config.swizzle = true;
  q.a.data_t = q.a.scales_t = nullptr;
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales", "shape [1, 1, 32, 16]");
}

TEST(QuantValidation, Nvfp4NeedsTensorScale) {
  Q q;
  q.nvfp4();
  q.a.tensor_scale = nullptr;
  expect_error(q.run(), StatusCode::kInvalidArgument, "tensor_scale", "an f32 (1) tensor for nvfp4");
}

TEST(QuantValidation, TensorScaleOnlyForNvfp4) {
  Q q;
  q.a.tensor_scale = &q.vts;
  expect_error(q.run(), StatusCode::kInvalidArgument, "tensor_scale", "only nvfp4");
}

TEST(QuantValidation, TensorScaleShape) {
  Q q;
  q.nvfp4();
  q.vts = TensorView::contiguous(q.ts, DType::kF32, {1, 1});
  expect_error(q.run(), StatusCode::kInvalidArgument, "tensor_scale", "shape [1]");
}

TEST(QuantValidation, AmaxOnlyForTensorScaledFormats) {
  Q q;
  TensorView am = TensorView::contiguous(q.ts, DType::kF32, {1});
  q.a.amax = &am;
  expect_error(q.run(), StatusCode::kInvalidArgument, "amax", "only fp8_tensor and nvfp4");
  Q n;
  n.nvfp4();
  float given = 3.0f;
  TensorView ok = TensorView::contiguous(&given, DType::kF32, {1});
  n.a.amax = &ok;
  EXPECT_TRUE(n.run().ok()) << n.run().message();
}

TEST(QuantValidation, AmaxDtypeAndShape) {
  Q q;
  q.nvfp4();
  float given[2] = {3.0f, 4.0f};
  TensorView am = TensorView::contiguous(given, DType::kF16, {1});
  q.a.amax = &am;
  expect_error(q.run(), StatusCode::kInvalidDType, "amax", "f32");
  am = TensorView::contiguous(given, DType::kF32, {2});
  expect_error(q.run(), StatusCode::kInvalidArgument, "amax", "shape [1]");
}

TEST(QuantValidation, AmaxDevice) {
  Q q;
  q.nvfp4();
  float given = 3.0f;
  TensorView am = TensorView::contiguous(&given, DType::kF32, {1});
  am.device = Device{DeviceType::kCUDA, 0};
  q.a.amax = &am;
  expect_error(q.run(), StatusCode::kInvalidArgument, "amax", "a tensor on cpu");
}

TEST(QuantValidation, OutputOverlapsAmax) {
  Q q;
  q.nvfp4();
  TensorView am = TensorView::contiguous(q.ts, DType::kF32, {1});  // the tensor-scale output
  q.a.amax = &am;
  expect_error(q.run(), StatusCode::kInvalidArgument, "tensor_scale", "disjoint from 'amax'");
}

TEST(QuantValidation, ScalesTWithoutDataT) {
  Q q;
  q.a.data_t = nullptr;
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales_t", "none when 'data_t'");
}

TEST(QuantValidation, TransposeNeeds2D) {
  Q q;
  q.a.x = TensorView::contiguous(q.x, DType::kF32, {2, R / 2, K});
  q.a.data = TensorView::contiguous(q.data, DType::kE4M3, {2, R / 2, K});
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "2-D tensor (R, K) when the transposed");
}

TEST(QuantValidation, TransposeNeedsRowsMultipleOfBlock) {
  Q q;
  q.a.x = TensorView::contiguous(q.x, DType::kF32, {48, K});
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "first dimension (R) that is a multiple of 32");
}

TEST(QuantValidation, DataTShape) {
  Q q;
  q.vdt = TensorView::contiguous(q.data_t, DType::kE4M3, {R, K / 2});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data_t", "(K, R)");
}

TEST(QuantValidation, DataTDtype) {
  Q q;
  q.vdt.dtype = DType::kE5M2;
  expect_error(q.run(), StatusCode::kInvalidDType, "data_t", "e4m3");
}

TEST(QuantValidation, DataTPaddedRows) {
  Q q;  // FP8: rows of data_t may lie further apart than R codes (unit stride along R)
  alignas(64) static uint8_t padded[K * (R + 16)];
  q.vdt = TensorView::strided(padded, DType::kE4M3, {K, R}, {R + 16, 1});
  EXPECT_TRUE(q.run().ok()) << q.run().message();
  q.vdt = TensorView::strided(padded, DType::kE4M3, {K, R}, {R + 3, 1});
  EXPECT_TRUE(q.run().ok()) << q.run().message();
}

TEST(QuantValidation, DataTRowsTooClose) {
  Q q;
  q.vdt = TensorView::strided(q.data_t, DType::kE4M3, {K, R}, {R - 1, 1});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data_t", "at least 64 codes apart");
}

TEST(QuantValidation, DataTStrideAlongRows) {
  Q q;
  q.vdt = TensorView::strided(q.data_t, DType::kE4M3, {K, R}, {1, K});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data_t", "unit stride along its rows");
}

TEST(QuantValidation, Fp4DataTContiguous) {
  Q q;  // MXFP4 with the transposed copy: e2m1 codes, packed, so no padded rows
  alignas(64) static uint8_t padded[K * (R + 32)];
  q.a.config.format = QuantFormat::kMxfp4;
  q.a.data.dtype = DType::kE2M1;
  q.vdt = TensorView::strided(padded, DType::kE2M1, {K, R}, {R + 32, 1});
  expect_error(q.run(), StatusCode::kInvalidArgument, "data_t", "fp4 codes pack two per byte");
}

TEST(QuantValidation, ScalesTRequired) {
  Q q;
  q.a.scales_t = nullptr;
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales_t", "a tensor for the scales");
}

TEST(QuantValidation, ScalesTNotForPerTensor) {
  Q q;
  q.a.config.format = QuantFormat::kFp8Tensor;
  q.a.scales = TensorView::contiguous(q.f32s, DType::kF32, {1});
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales_t", "none for fp8_tensor");
}

TEST(QuantValidation, ScalesTShape) {
  Q q;
  q.vst = TensorView::contiguous(q.scales_t, DType::kUE8M0, {R, K / 32});
  q.vst.shape[0] = K / 2;
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales_t", "shape [64, 2]");
}

TEST(QuantValidation, OutputOverlapsInput) {
  Q q;
  q.a.data.data = q.x;
  expect_error(q.run(), StatusCode::kInvalidArgument, "data", "disjoint from 'x'");
}

TEST(QuantValidation, OutputsOverlapEachOther) {
  Q q;
  q.vst.data = q.data + 10;
  expect_error(q.run(), StatusCode::kInvalidArgument, "scales_t", "disjoint from 'data'");
}

TEST(QuantValidation, CudaInputMustBeContiguous) {
  Q q;
  const Device gpu{DeviceType::kCUDA, 0};
  for (TensorView* t : {&q.a.x, &q.a.data, &q.a.scales, &q.vdt, &q.vst}) t->device = gpu;
  q.a.x = TensorView::strided(q.x, DType::kF32, {R, K}, {1, R}, gpu);
  expect_error(q.run(), StatusCode::kInvalidArgument, "x", "contiguous");
}

// ------------------------------------------------------------------------------------ dequantize

struct D {
  alignas(64) uint8_t data[R * K] = {}, scales[R * K / 16] = {};
  alignas(64) float out[R * K], ts[1] = {1.0f};
  TensorView vts;
  DequantizeArgs a;
  D() {
    a.data = TensorView::contiguous(data, DType::kE4M3, {R, K});
    a.scales = TensorView::contiguous(scales, DType::kUE8M0, {R, K / 32});
    a.out = TensorView::contiguous(out, DType::kF32, {R, K});
    a.config.format = QuantFormat::kMxfp8;
    vts = TensorView::contiguous(ts, DType::kF32, {1});
  }
  Status run() { return dequantize(a); }
};

TEST(DequantValidation, ValidCallSucceeds) {
  D d;
  EXPECT_TRUE(d.run().ok()) << d.run().message();
}

TEST(DequantValidation, DataDtype) {
  D d;
  d.a.data.dtype = DType::kE2M1;
  expect_error(d.run(), StatusCode::kInvalidDType, "data", "e4m3 or e5m2");
}

TEST(DequantValidation, DataKMultipleOfBlock) {
  D d;
  d.a.data = TensorView::contiguous(d.data, DType::kE4M3, {R, 40});
  expect_error(d.run(), StatusCode::kInvalidArgument, "data", "multiple of 32");
}

TEST(DequantValidation, DataContiguous) {
  D d;
  d.a.data = TensorView::strided(d.data, DType::kE4M3, {R, K}, {1, R});
  expect_error(d.run(), StatusCode::kInvalidArgument, "data", "contiguous");
}

TEST(DequantValidation, DataPaddedRows) {
  D d;  // 2-D FP8 data with padded rows is read in place
  alignas(64) static uint8_t padded[R * (K + 16)] = {};
  d.a.data = TensorView::strided(padded, DType::kE4M3, {R, K}, {K + 16, 1});
  EXPECT_TRUE(d.run().ok()) << d.run().message();
  d.a.data = TensorView::strided(padded, DType::kE4M3, {R, K}, {K - 8, 1});
  expect_error(d.run(), StatusCode::kInvalidArgument, "data", "at least 64 codes apart");
}

TEST(DequantValidation, ScalesShape) {
  D d;
  d.a.scales = TensorView::contiguous(d.scales, DType::kUE8M0, {R, K / 16});
  expect_error(d.run(), StatusCode::kInvalidArgument, "scales", "shape [64, 2]");
}

TEST(DequantValidation, ScalesDtype) {
  D d;
  d.a.scales.dtype = DType::kUE4M3;
  expect_error(d.run(), StatusCode::kInvalidDType, "scales", "ue8m0");
}

TEST(DequantValidation, OutDtype) {
  D d;
  d.a.out.dtype = DType::kE4M3;
  expect_error(d.run(), StatusCode::kInvalidDType, "out", "f32, f16 or bf16");
}

TEST(DequantValidation, OutShape) {
  D d;
  d.a.out = TensorView::contiguous(d.out, DType::kF32, {K, R / 2});
  expect_error(d.run(), StatusCode::kInvalidArgument, "out", "the shape of 'data'");
}

TEST(DequantValidation, OutDevice) {
  D d;
  d.a.out.device = {DeviceType::kCUDA, 0};
  expect_error(d.run(), StatusCode::kInvalidArgument, "out", "on cpu");
}

TEST(DequantValidation, Nvfp4NeedsTensorScale) {
  D d;
  d.a.config.format = QuantFormat::kNvfp4;
  d.a.data.dtype = DType::kE2M1;
  d.a.scales = TensorView::contiguous(d.scales, DType::kUE4M3, {R, K / 16});
  expect_error(d.run(), StatusCode::kInvalidArgument, "tensor_scale", "for nvfp4");
  d.a.tensor_scale = &d.vts;
  EXPECT_TRUE(d.run().ok()) << d.run().message();
}

TEST(DequantValidation, TensorScaleOnlyForNvfp4) {
  D d;
  d.a.tensor_scale = &d.vts;
  expect_error(d.run(), StatusCode::kInvalidArgument, "tensor_scale", "only nvfp4");
}

TEST(DequantValidation, OutOverlapsData) {
  D d;
  d.a.out.data = d.data;
  expect_error(d.run(), StatusCode::kInvalidArgument, "out", "disjoint from 'data'");
}

TEST(DequantValidation, SwizzleOnlyForByteScales) {
  D d;
  d.a.config.format = QuantFormat::kFp8Row;
  d.a.config.swizzle = true;
  expect_error(d.run(), StatusCode::kInvalidArgument, "swizzle", "false for fp8_row");
}

// ----------------------------------------------------------------------- shapes, layouts, GEMM

TEST(QuantShapesValidation, NegativeSize) {
  QuantShapes s;
  Shape x{2, {4, -1}};
  expect_error(quantize_shapes(QuantConfig{}, x, false, &s), StatusCode::kInvalidArgument,
               "x_shape", "non-negative");
}

TEST(QuantShapesValidation, NullOutput) {
  expect_error(quantize_shapes(QuantConfig{}, Shape{1, {32}}, false, nullptr),
               StatusCode::kInvalidArgument, "out", "QuantShapes");
}

TEST(QuantShapesValidation, ShapesOfEveryFormat) {
  QuantShapes s;
  const Shape x{3, {2, 200, 256}};
  QuantConfig c;
  c.format = QuantFormat::kFp8Block128x128;
  ASSERT_TRUE(quantize_shapes(c, x, false, &s).ok());
  EXPECT_EQ(s.scales.ndim, 3);
  EXPECT_EQ(s.scales.dims[1], 2);
  EXPECT_EQ(s.scales.dims[2], 2);
  c.format = QuantFormat::kNvfp4;
  c.swizzle = true;
  ASSERT_TRUE(quantize_shapes(c, x, false, &s).ok());
  EXPECT_TRUE(s.has_tensor_scale);
  EXPECT_EQ(s.scale_dtype, DType::kUE4M3);
  EXPECT_EQ(s.scales.ndim, 4);
  EXPECT_EQ(s.scales.dims[0], 4);  // 400 rows -> 4 tiles of 128
  EXPECT_EQ(s.scales.dims[1], 4);  // 16 scale columns -> 4 of 4
  c = QuantConfig{QuantFormat::kFp8Row};
  ASSERT_TRUE(quantize_shapes(c, Shape{2, {5, 7}}, true, &s).ok());
  EXPECT_EQ(s.scales.dims[0], 5);
  EXPECT_EQ(s.scales.dims[1], 1);
  EXPECT_EQ(s.data_t.dims[0], 7);
  EXPECT_EQ(s.scales_t.dims[0], 7);
}

struct Swz {
  alignas(64) uint8_t rm[130 * 5] = {}, sw[2 * 2 * 512] = {};
  TensorView in = TensorView::contiguous(rm, DType::kUE8M0, {130, 5});
  TensorView out = TensorView::contiguous(sw, DType::kUE8M0, {2, 2, 32, 16});
};

TEST(SwizzleValidation, ValidCallSucceeds) {
  Swz s;
  EXPECT_TRUE(swizzle_scales(s.in, s.out).ok());
  EXPECT_TRUE(unswizzle_scales(s.out, s.in).ok());
}

TEST(SwizzleValidation, ScaleDtype) {
  Swz s;
  s.in.dtype = s.out.dtype = DType::kF32;
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidDType, "scales", "ue8m0");
}

TEST(SwizzleValidation, DtypeMismatch) {
  Swz s;
  s.out.dtype = DType::kUE4M3;
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidDType, "out", "ue8m0");
}

TEST(SwizzleValidation, SwizzledShape) {
  Swz s;
  s.out = TensorView::contiguous(s.sw, DType::kUE8M0, {1, 2, 32, 16});
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidArgument, "out", "shape [2, 2, 32, 16]");
  expect_error(unswizzle_scales(s.out, s.in), StatusCode::kInvalidArgument, "swizzled", "[2, 2, 32, 16]");
}

TEST(SwizzleValidation, RowMajorContiguous) {
  Swz s;
  s.in = TensorView::strided(s.rm, DType::kUE8M0, {5, 130}, {1, 5});
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidArgument, "scales", "contiguous");
}

TEST(SwizzleValidation, ScalarInput) {
  Swz s;
  s.in.ndim = 0;
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidArgument, "scales", "at least 1 dimension");
}

TEST(SwizzleValidation, Overlap) {
  Swz s;
  s.out.data = s.rm;
  expect_error(swizzle_scales(s.in, s.out), StatusCode::kInvalidArgument, "out", "disjoint");
}

struct G {
  alignas(64) uint8_t a[4 * 64] = {}, b[6 * 64] = {}, sa[8] = {}, sb[12] = {};
  alignas(64) float d[24];
  ScaledGemmArgs g;
  G() {
    g.a = {TensorView::contiguous(a, DType::kE4M3, {4, 64}),
           TensorView::contiguous(sa, DType::kUE8M0, {4, 2}), nullptr, QuantConfig{}};
    g.b = {TensorView::contiguous(b, DType::kE4M3, {6, 64}),
           TensorView::contiguous(sb, DType::kUE8M0, {6, 2}), nullptr, QuantConfig{}};
    g.d = TensorView::contiguous(d, DType::kF32, {4, 6});
  }
};

TEST(ScaledGemmValidation, ValidCallSucceeds) {
  G g;
  Status s = scaled_gemm_reference(g.g);
  EXPECT_TRUE(s.ok()) << s.message();
  for (float v : g.d) EXPECT_EQ(v, 0.0f);
}

TEST(ScaledGemmValidation, OperandScales) {
  G g;
  g.g.b.scales.shape[1] = 1;
  expect_error(scaled_gemm_reference(g.g), StatusCode::kInvalidArgument, "b.scales", "shape [6, 2]");
}

TEST(ScaledGemmValidation, OperandRank) {
  G g;
  g.g.a.data = TensorView::contiguous(g.a, DType::kE4M3, {256});
  g.g.a.scales = TensorView::contiguous(g.sa, DType::kUE8M0, {8});
  expect_error(scaled_gemm_reference(g.g), StatusCode::kInvalidArgument, "a.data", "2-D");
}

TEST(ScaledGemmValidation, InnerDimension) {
  G g;
  g.g.b.data = TensorView::contiguous(g.b, DType::kE4M3, {12, 32});
  g.g.b.scales = TensorView::contiguous(g.sb, DType::kUE8M0, {12, 1});
  expect_error(scaled_gemm_reference(g.g), StatusCode::kInvalidArgument, "b.data", "K = 64");
}

TEST(ScaledGemmValidation, OutputShapeViaGemm) {
  G g;
  g.g.d = TensorView::contiguous(g.d, DType::kF32, {4, 5});
  expect_error(scaled_gemm_reference(g.g), StatusCode::kInvalidArgument, "d", "(M, N) = (4, 6)");
}

TEST(ScaledGemmValidation, CpuOnly) {
  G g;
  for (TensorView* t : {&g.g.a.data, &g.g.a.scales, &g.g.b.data, &g.g.b.scales, &g.g.d}) {
    t->device = {DeviceType::kCUDA, 0};
  }
  EXPECT_EQ(scaled_gemm_reference(g.g).code(), StatusCode::kNotSupported);
}

}  // namespace
