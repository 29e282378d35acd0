// quantize / dequantize on CPU: special blocks, both MX scale rules, partial blocks, transposed
// copies, the swizzled layout, round trips, and the block-scaled GEMM reference.
#include <cmath>
#include <cstring>

#include "deepwell/quant.hpp"
#include "helpers.hpp"
#include "quant/codec.hpp"

namespace {

using namespace deepwell;
using deepwell::quant::abs_bits;
using dwtest::Buffer;

// Owning outputs of one quantize() call, allocated from quantize_shapes().
struct Quantized {
  QuantConfig cfg;
  QuantShapes shapes;
  DType elem;
  std::vector<uint8_t> data, scales, tensor_scale, data_t, scales_t;
  TensorView vdata, vscales, vts, vdata_t, vscales_t;

  static int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int i = 0; i < s.ndim; ++i) n *= s.dims[i];
    return n;
  }
  static TensorView view(std::vector<uint8_t>& buf, DType dt, const Shape& s) {
    buf.assign(static_cast<size_t>((numel(s) * dtype_bits(dt) + 7) / 8 + 1), 0xcd);  // poison
    TensorView t;
    t.data = buf.data();
    t.dtype = dt;
    t.ndim = s.ndim;
    int64_t stride = 1;
    for (int i = s.ndim - 1; i >= 0; --i) {
      t.shape[i] = s.dims[i];
      t.strides[i] = stride;
      stride *= s.dims[i];
    }
    return t;
  }

  Quantized(const TensorView& x, QuantConfig c, DType elem_dtype, bool transpose = false,
            const float* amax = nullptr)
      : cfg(c), elem(elem_dtype) {
    Shape xs;
    xs.ndim = x.ndim;
    for (int i = 0; i < x.ndim; ++i) xs.dims[i] = x.shape[i];
    Status st = quantize_shapes(c, xs, transpose, &shapes);
    EXPECT_TRUE(st.ok()) << st.message();
    vdata = view(data, elem, shapes.data);
    vscales = view(scales, shapes.scale_dtype, shapes.scales);
    vts = view(tensor_scale, DType::kF32, Shape{1, {1}});
    if (transpose) {
      vdata_t = view(data_t, elem, shapes.data_t);
      if (shapes.scales_t.ndim) vscales_t = view(scales_t, shapes.scale_dtype, shapes.scales_t);
    }
    QuantizeArgs a;
    a.x = x;
    a.data = vdata;
    a.scales = vscales;
    a.config = c;
    if (shapes.has_tensor_scale) a.tensor_scale = &vts;
    TensorView vamax;
    if (amax != nullptr) {
      vamax = TensorView::contiguous(const_cast<float*>(amax), DType::kF32, {1});
      a.amax = &vamax;
    }
    if (transpose) {
      a.data_t = &vdata_t;
      if (shapes.scales_t.ndim) a.scales_t = &vscales_t;
    }
    st = quantize(a);
    EXPECT_TRUE(st.ok()) << st.message();
  }

  std::vector<float> dequant() {
    const int64_t n = numel(shapes.data);
    std::vector<float> out(static_cast<size_t>(n));
    DequantizeArgs a;
    a.data = vdata;
    a.scales = vscales;
    a.tensor_scale = shapes.has_tensor_scale ? &vts : nullptr;
    a.out = vdata;
    a.out.data = out.data();
    a.out.dtype = DType::kF32;
    a.config = cfg;
    Status st = dequantize(a);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }

  uint8_t code(int64_t i) const {
    if (elem != DType::kE2M1) return data[i];
    return (i & 1) ? data[i / 2] >> 4 : data[i / 2] & 0xf;
  }
  float f32_scale(int64_t i) const {
    float s;
    std::memcpy(&s, scales.data() + 4 * i, 4);
    return s;
  }
  float tscale() const {
    float s;
    std::memcpy(&s, tensor_scale.data(), 4);
    return s;
  }
};

QuantConfig cfg(QuantFormat f, ScaleRule r = ScaleRule::kFloor, bool pow2 = false, bool swz = false) {
  return QuantConfig{f, r, pow2, swz};
}

std::vector<float> randn(int64_t n, std::mt19937_64& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TensorView f32_view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::kF32, shape);
}

TEST(QuantReference, MxSpecialBlocks) {
  // Four MX blocks of 32: zero, all-equal, single outlier, NaN-containing.
  std::vector<float> x(128, 0.0f);
  for (int i = 32; i < 64; ++i) x[i] = -3.0f;
  for (int i = 64; i < 96; ++i) x[i] = 0.01f;
  x[70] = 1000.0f;
  for (int i = 96; i < 128; ++i) x[i] = 1.0f;
  x[100] = NAN;
  Quantized q(f32_view(x, {128}), cfg(QuantFormat::kMxfp8), DType::kE4M3);
  EXPECT_EQ(q.scales[0], 0);                  // E = -127
  EXPECT_EQ(q.scales[1], 127 + 1 - 8);        // floor(log2 3) - 8
  EXPECT_EQ(q.scales[2], 127 + 9 - 8);        // floor(log2 1000) = 9
  EXPECT_EQ(q.scales[3], 0xff);               // NaN
  for (int i = 0; i < 32; ++i) EXPECT_EQ(q.code(i), 0x00);
  for (int i = 32; i < 64; ++i) EXPECT_EQ(q.code(i), quant::encode_e4m3(-3.0f * 128.0f));
  EXPECT_EQ(q.code(70), quant::encode_e4m3(500.0f));  // 1000 / 2 = 500 -> saturates to 448
  EXPECT_EQ(q.code(70), 0x7e);
  EXPECT_EQ(q.code(64), quant::encode_e4m3(0.005f));  // 0.01 / 2: a subnormal next to the outlier
  for (int i = 96; i < 128; ++i) EXPECT_EQ(q.code(i), quant::kE4M3NaN);
  const auto d = q.dequant();
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[40], -3.0f);
  EXPECT_EQ(d[70], 896.0f);
  for (int i = 96; i < 128; ++i) EXPECT_TRUE(std::isnan(d[i]));
  // rceil never clips: 1000 / 4 = 250 -> e4m3 256, times 4.
  Quantized r(f32_view(x, {128}), cfg(QuantFormat::kMxfp8, ScaleRule::kRceil), DType::kE4M3);
  EXPECT_EQ(r.scales[2], 127 + 2);  // ceil(log2(1000 / 448)) = 2
  EXPECT_EQ(r.dequant()[70], 1024.0f);
  EXPECT_EQ(r.scales[0], 0);
}

TEST(QuantReference, Mxfp4PacksLowIndexInLowNibble) {
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;   // amax 6: floor(log2 6) - 2 = 0 -> scale 1
  x[1] = -0.5f;
  x[2] = 1.5f;
  x[3] = 3.0f;
  Quantized q(f32_view(x, {1, 32}), cfg(QuantFormat::kMxfp4), DType::kE2M1);
  EXPECT_EQ(q.scales[0], 127);
  EXPECT_EQ(q.data[0], 0x7 | 0x9 << 4);
  EXPECT_EQ(q.data[1], 0x3 | 0x5 << 4);
  const auto d = q.dequant();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(d[i], x[i]);
}

TEST(QuantReference, MxScaleRulesOn500) {
  std::vector<float> x(32, 1.0f);
  x[5] = 500.0f;
  Quantized fl(f32_view(x, {32}), cfg(QuantFormat::kMxfp8), DType::kE4M3);
  EXPECT_EQ(fl.scales[0], 127);  // E = 0
  EXPECT_EQ(fl.code(5), 0x7e);   // stores 448
  Quantized rc(f32_view(x, {32}), cfg(QuantFormat::kMxfp8, ScaleRule::kRceil), DType::kE4M3);
  EXPECT_EQ(rc.scales[0], 128);  // E = 1
  EXPECT_EQ(rc.dequant()[5], 512.0f);  // 250 rounds to 256 in e4m3
  Quantized e5(f32_view(x, {32}), cfg(QuantFormat::kMxfp8), DType::kE5M2);
  EXPECT_EQ(e5.scales[0], 127 + 8 - 15);
}

TEST(QuantReference, Fp8BlockScalesAndPartialBlocks) {
  // 1x128 with K = 300: blocks of 128, 128, 44 (partial: amax over the 44 that exist).
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 3, K = 300;
  auto x = randn(R * K, rng);
  x[1 * K + 260] = 50.0f;  // outlier in the partial block of row 1
  for (int64_t c = 128; c < 256; ++c) x[2 * K + c] = 0.0f;  // zero block
  Quantized q(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Block1x128), DType::kE4M3);
  ASSERT_EQ(q.shapes.scales.ndim, 2);
  EXPECT_EQ(q.shapes.scales.dims[1], 3);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t g = 0; g < 3; ++g) {
      float amax = 0;
      for (int64_t c = g * 128; c < std::min(K, g * 128 + 128); ++c) amax = std::max(amax, std::fabs(x[r * K + c]));
      const float expect = amax == 0 ? std::ldexp(1.0f, -126) : amax / 448.0f;
      EXPECT_EQ(q.f32_scale(r * 3 + g), expect) << r << "," << g;
      for (int64_t c = g * 128; c < std::min(K, g * 128 + 128); ++c) {
        ASSERT_EQ(q.code(r * K + c), quant::encode_e4m3(x[r * K + c] / expect));
      }
    }
  }
  EXPECT_EQ(q.code(1 * K + 260), 0x7e);  // the outlier maps to 448 exactly
  // Power-of-two scales: the smallest power of two >= amax / 448.
  Quantized p(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Block1x128, ScaleRule::kFloor, true), DType::kE4M3);
  for (int64_t i = 0; i < R * 3; ++i) {
    const float s = p.f32_scale(i), s_plain = q.f32_scale(i);
    int e;
    EXPECT_EQ(std::frexp(s, &e), 0.5f);
    EXPECT_GE(s, s_plain);
    EXPECT_LT(s / 2, s_plain);
  }
}

TEST(QuantReference, Fp8Block128x128WithBatchAndPartialBlocks) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t B = 2, R = 200, K = 130;
  auto x = randn(B * R * K, rng);
  x[(1 * R + 150) * K + 129] = -77.0f;  // batch 1, block (1, 1): a 50 x 2 partial block
  Quantized q(f32_view(x, {B, R, K}), cfg(QuantFormat::kFp8Block128x128), DType::kE4M3);
  ASSERT_EQ(q.shapes.scales.ndim, 3);
  EXPECT_EQ(q.shapes.scales.dims[0], B);
  EXPECT_EQ(q.shapes.scales.dims[1], 2);
  EXPECT_EQ(q.shapes.scales.dims[2], 2);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t br = 0; br < 2; ++br) {
      for (int64_t bc = 0; bc < 2; ++bc) {
        float amax = 0;
        for (int64_t r = br * 128; r < std::min(R, br * 128 + 128); ++r) {
          for (int64_t c = bc * 128; c < std::min(K, bc * 128 + 128); ++c) {
            amax = std::max(amax, std::fabs(x[(b * R + r) * K + c]));
          }
        }
        const float s = q.f32_scale((b * 2 + br) * 2 + bc);
        EXPECT_EQ(s, amax / 448.0f);
        for (int64_t r = br * 128; r < std::min(R, br * 128 + 128); ++r) {
          for (int64_t c = bc * 128; c < std::min(K, bc * 128 + 128); ++c) {
            ASSERT_EQ(q.code((b * R + r) * K + c), quant::encode_e4m3(x[(b * R + r) * K + c] / s));
          }
        }
      }
    }
  }
  EXPECT_EQ(q.f32_scale((1 * 2 + 1) * 2 + 1), 77.0f / 448.0f);
}

TEST(QuantReference, PerTensorAndPerRow) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 5, K = 37;
  auto x = randn(R * K, rng);
  x[3 * K + 7] = 123.0f;
  Quantized t(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE5M2);
  EXPECT_EQ(t.f32_scale(0), 123.0f / 57344.0f);
  Quantized r(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Row), DType::kE4M3);
  ASSERT_EQ(r.shapes.scales.ndim, 2);
  EXPECT_EQ(r.shapes.scales.dims[1], 1);
  for (int64_t i = 0; i < R; ++i) {
    float amax = 0;
    for (int64_t c = 0; c < K; ++c) amax = std::max(amax, std::fabs(x[i * K + c]));
    EXPECT_EQ(r.f32_scale(i), amax / 448.0f);
  }
  // One NaN poisons its scale: the whole tensor for per-tensor, one row for per-row.
  x[2 * K + 1] = NAN;
  Quantized tn(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3);
  EXPECT_TRUE(std::isnan(tn.f32_scale(0)));
  for (float v : tn.dequant()) EXPECT_TRUE(std::isnan(v));
  Quantized rn(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Row), DType::kE4M3);
  const auto d = rn.dequant();
  for (int64_t c = 0; c < K; ++c) {
    EXPECT_TRUE(std::isnan(d[2 * K + c]));
    EXPECT_FALSE(std::isnan(d[3 * K + c]));
  }
}

TEST(QuantReference, Nvfp4) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 4, K = 48;
  auto x = randn(R * K, rng);
  for (int64_t c = 16; c < 32; ++c) x[c] = 0.0f;  // zero block
  x[K + 3] = 40.0f;                                // tensor amax
  Quantized q(f32_view(x, {R, K}), cfg(QuantFormat::kNvfp4), DType::kE2M1);
  const float s_t = q.tscale();
  EXPECT_EQ(s_t, 40.0f / 2688.0f);
  EXPECT_EQ(q.scales[1], 0x08);  // zero block: s_b clamped to 2^-6
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t g = 0; g < 3; ++g) {
      float amax = 0;
      for (int64_t c = g * 16; c < g * 16 + 16; ++c) amax = std::max(amax, std::fabs(x[r * K + c]));
      float v = (amax / 6.0f) / s_t;
      v = std::min(448.0f, std::max(0.015625f, v));
      const uint8_t sb = q.scales[r * 3 + g];
      EXPECT_EQ(sb, quant::encode_e4m3(v));
      const float d = s_t * quant::decode_e4m3(sb);
      for (int64_t c = g * 16; c < g * 16 + 16; ++c) {
        ASSERT_EQ(q.code(r * K + c), quant::encode_e2m1(x[r * K + c] / d));
      }
    }
  }
  const auto d = q.dequant();
  EXPECT_NEAR(d[K + 3], 40.0f, 40.0f / 6);
  // NaN anywhere: NaN tensor scale, everything decodes to NaN.
  x[5] = NAN;
  Quantized n(f32_view(x, {R, K}), cfg(QuantFormat::kNvfp4), DType::kE2M1);
  EXPECT_TRUE(std::isnan(n.tscale()));
  for (float v : n.dequant()) EXPECT_TRUE(std::isnan(v));
}

// A caller-given amax (delayed scaling): the scale comes from |amax| by the same rule; the amax of
// x itself gives exactly the default result; a smaller one saturates the largest elements.
TEST(QuantReference, GivenAmax) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 32, K = 48;
  auto x = randn(R * K, rng);
  x[7 * K + 5] = -20.0f;  // the tensor amax
  const float own = 20.0f, neg_double = -40.0f, quarter = 5.0f, nan = NAN;

  Quantized t(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3, true);
  Quantized t_own(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3, true, &own);
  EXPECT_EQ(t_own.scales, t.scales);
  EXPECT_EQ(t_own.data, t.data);
  EXPECT_EQ(t_own.data_t, t.data_t);
  Quantized t2(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3, false, &neg_double);
  EXPECT_EQ(t2.f32_scale(0), 40.0f / 448.0f);  // the sign of the given amax is dropped
  for (int64_t i = 0; i < R * K; ++i) {
    ASSERT_EQ(t2.code(i), quant::encode_scaled(quant::Elem::kE4M3, x[i], 40.0f / 448.0f)) << i;
  }
  Quantized tq(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3, false, &quarter);
  EXPECT_EQ(tq.f32_scale(0), 5.0f / 448.0f);
  EXPECT_EQ(tq.code(7 * K + 5), 0xfe);  // -20 saturates to -448 (e4m3 code 0xfe)
  Quantized tn(f32_view(x, {R, K}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3, false, &nan);
  EXPECT_TRUE(std::isnan(tn.f32_scale(0)));

  Quantized n(f32_view(x, {R, K}), cfg(QuantFormat::kNvfp4), DType::kE2M1);
  Quantized n_own(f32_view(x, {R, K}), cfg(QuantFormat::kNvfp4), DType::kE2M1, false, &own);
  EXPECT_EQ(n_own.tensor_scale, n.tensor_scale);
  EXPECT_EQ(n_own.scales, n.scales);
  EXPECT_EQ(n_own.data, n.data);
  // amax 5 for a tensor whose amax is 20: block scales above 448 clamp to 448.
  Quantized nq(f32_view(x, {R, K}), cfg(QuantFormat::kNvfp4), DType::kE2M1, false, &quarter);
  const float s_t = nq.tscale();
  EXPECT_EQ(s_t, 5.0f / 2688.0f);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t g = 0; g < K / 16; ++g) {
      float amax = 0;
      for (int64_t c = g * 16; c < g * 16 + 16; ++c) amax = std::max(amax, std::fabs(x[r * K + c]));
      const float v = std::min(448.0f, std::max(0.015625f, (amax / 6.0f) / s_t));
      const uint8_t sb = nq.scales[r * (K / 16) + g];
      ASSERT_EQ(sb, quant::encode_e4m3(v));
      const float d = s_t * quant::decode_e4m3(sb);
      for (int64_t c = g * 16; c < g * 16 + 16; ++c) {
        ASSERT_EQ(nq.code(r * K + c), quant::encode_e2m1(x[r * K + c] / d));
      }
    }
  }
  EXPECT_EQ(nq.code(7 * K + 5), 0xf);  // -20 saturates to -6 * s_b * s_t
}

// Round trips: decode(encode(x)) is within half a unit of the element format, relative to the
// block scale (or exact for values on the grid).
TEST(QuantReference, RoundTripErrorBounds) {
  std::mt19937_64 rng(dwtest::test_seed());
  SCOPED_TRACE("seed " + std::to_string(dwtest::test_seed()));
  const int64_t R = 33, K = 256;
  auto x = randn(R * K, rng, 3.0f);
  struct Case { QuantFormat f; DType e; ScaleRule r; double rel; };
  // rel: bound on |err| / amax(block) (half an ulp at the top binade, plus clipping for floor).
  const Case cases[] = {
      {QuantFormat::kFp8Tensor, DType::kE4M3, ScaleRule::kFloor, 1.0 / 16},
      {QuantFormat::kFp8Row, DType::kE4M3, ScaleRule::kFloor, 1.0 / 16},
      {QuantFormat::kFp8Block1x128, DType::kE5M2, ScaleRule::kFloor, 1.0 / 8},
      {QuantFormat::kFp8Block128x128, DType::kE4M3, ScaleRule::kFloor, 1.0 / 16},
      {QuantFormat::kMxfp8, DType::kE4M3, ScaleRule::kRceil, 1.0 / 16},
      {QuantFormat::kMxfp8, DType::kE4M3, ScaleRule::kFloor, 1.0 / 8},
      {QuantFormat::kMxfp4, DType::kE2M1, ScaleRule::kRceil, 1.0 / 3},
      {QuantFormat::kNvfp4, DType::kE2M1, ScaleRule::kFloor, 1.0 / 3},
  };
  for (const Case& c : cases) {
    Quantized q(f32_view(x, {R, K}), cfg(c.f, c.r), c.e);
    const auto d = q.dequant();
    double amax = 0, err = 0;
    for (int64_t i = 0; i < R * K; ++i) {
      amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      err = std::max(err, std::fabs(static_cast<double>(d[i]) - x[i]));
    }
    EXPECT_LE(err, c.rel * amax) << quant_format_name(c.f);
    // Re-quantizing the decoded values reproduces the codes: the grid is a fixed point.
    Quantized q2(f32_view(const_cast<std::vector<float>&>(d), {R, K}), cfg(c.f, c.r), c.e);
    if (c.f == QuantFormat::kMxfp8 && c.r == ScaleRule::kFloor) {
      EXPECT_EQ(q2.data, q.data) << quant_format_name(c.f);
    }
  }
}

TEST(QuantReference, HalfPrecisionInputsMatchF32) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 7, K = 64;
  Buffer xb(DType::kBF16, R * K), xh(DType::kF16, R * K);
  dwtest::fill_random(xb, R * K, rng);
  dwtest::fill_random(xh, R * K, rng);
  for (Buffer* b : {&xb, &xh}) {
    std::vector<float> xf(R * K);
    for (int64_t i = 0; i < R * K; ++i) xf[i] = static_cast<float>(b->get(i));
    for (QuantFormat f : {QuantFormat::kMxfp8, QuantFormat::kFp8Row, QuantFormat::kNvfp4}) {
      const DType e = f == QuantFormat::kNvfp4 ? DType::kE2M1 : DType::kE4M3;
      Quantized a(TensorView::contiguous(b->data(), b->dtype, {R, K}), cfg(f), e);
      Quantized c(f32_view(xf, {R, K}), cfg(f), e);
      EXPECT_EQ(a.data, c.data);
      EXPECT_EQ(a.scales, c.scales);
    }
  }
}

TEST(QuantReference, StridedInputMatchesContiguous) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 6, K = 64;
  auto big = randn(2 * R * 3 * K, rng);
  // Every other row, every third column.
  TensorView xs = TensorView::strided(big.data(), DType::kF32, {R, K}, {2 * 3 * K, 3});
  std::vector<float> dense(R * K);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < K; ++c) dense[r * K + c] = big[r * 6 * K + c * 3];
  for (QuantFormat f : {QuantFormat::kMxfp4, QuantFormat::kFp8Block128x128, QuantFormat::kFp8Tensor}) {
    const DType e = f == QuantFormat::kMxfp4 ? DType::kE2M1 : DType::kE4M3;
    Quantized a(xs, cfg(f), e), b(f32_view(dense, {R, K}), cfg(f), e);
    EXPECT_EQ(a.data, b.data) << quant_format_name(f);
    EXPECT_EQ(a.scales, b.scales);
  }
}

// The transposed copy is quantize(x^T) for every format; for 128x128 and per-tensor it is also
// exactly the transpose of the codes.
TEST(QuantReference, TransposedCopy) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 64, K = 96;
  auto x = randn(R * K, rng);
  x[5 * K + 70] = NAN;
  std::vector<float> xt(R * K);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < K; ++c) xt[c * R + r] = x[r * K + c];
  for (int fi = 0; fi <= 6; ++fi) {
    const auto f = static_cast<QuantFormat>(fi);
    for (bool swz : {false, true}) {
      if (swz && fi < 4) continue;
      const DType e = (f == QuantFormat::kMxfp4 || f == QuantFormat::kNvfp4) ? DType::kE2M1 : DType::kE5M2;
      Quantized both(f32_view(x, {R, K}), cfg(f, ScaleRule::kFloor, false, swz), e, true);
      Quantized ref(f32_view(xt, {K, R}), cfg(f, ScaleRule::kFloor, false, swz), e);
      Quantized fwd(f32_view(x, {R, K}), cfg(f, ScaleRule::kFloor, false, swz), e);
      EXPECT_EQ(both.data, fwd.data) << quant_format_name(f);
      EXPECT_EQ(both.scales, fwd.scales) << quant_format_name(f);
      EXPECT_EQ(both.data_t, ref.data) << quant_format_name(f);
      if (f == QuantFormat::kFp8Tensor) {
        EXPECT_TRUE(both.scales_t.empty());
      } else {
        EXPECT_EQ(both.scales_t, ref.scales) << quant_format_name(f);
      }
      if (f == QuantFormat::kFp8Block128x128 || f == QuantFormat::kFp8Tensor) {
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < K; ++c) ASSERT_EQ(both.data_t[c * R + r], both.data[r * K + c]);
      }
    }
  }
}

// FP8 data_t with padded rows (unit stride along R, rows ld > R codes apart): the codes are
// those of the contiguous copy, the padding bytes stay untouched, and dequantize reads the same
// padded view back.
TEST(QuantReference, TransposedCopyWithPaddedRows) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 37, K = 160;
  for (int64_t ld : {int64_t{48}, int64_t{40}}) {  // 16-byte rows, and rows at odd offsets
    auto x = randn(R * K, rng);
    for (int fi = 0; fi <= 4; ++fi) {  // the FP8 formats (MX: R % 32 != 0 has no transposed copy)
      const auto f = static_cast<QuantFormat>(fi);
      if (f == QuantFormat::kMxfp8) continue;
      Quantized dense(f32_view(x, {R, K}), cfg(f), DType::kE4M3, true);
      std::vector<uint8_t> padded(static_cast<size_t>(K * ld), 0xcd);
      TensorView vpad = TensorView::strided(padded.data(), DType::kE4M3, {K, R}, {ld, 1});
      // poisoned like Quantized's buffers (one byte past the end included)
      std::vector<uint8_t> data(R * K), scales(dense.scales.size(), 0xcd),
          scales_t(dense.scales_t.size(), 0xcd);
      TensorView vdata = dense.vdata, vscales = dense.vscales, vscales_t = dense.vscales_t;
      vdata.data = data.data();
      vscales.data = scales.data();
      vscales_t.data = scales_t.data();
      QuantizeArgs a;
      a.x = f32_view(x, {R, K});
      a.data = vdata;
      a.scales = vscales;
      a.data_t = &vpad;
      if (f != QuantFormat::kFp8Tensor) a.scales_t = &vscales_t;
      a.config = cfg(f);
      Status st = quantize(a);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(scales_t, dense.scales_t) << quant_format_name(f);
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t r = 0; r < ld; ++r) {
          const uint8_t want = r < R ? dense.data_t[k * R + r] : 0xcd;
          ASSERT_EQ(padded[k * ld + r], want) << quant_format_name(f) << " ld " << ld << " at "
                                              << k << ", " << r;
        }
      }
      // dequantize of the padded view == dequantize of the dense copy
      std::vector<float> out_pad(K * R), out_dense(K * R);
      DequantizeArgs d;
      d.data = vpad;
      d.scales = f == QuantFormat::kFp8Tensor ? dense.vscales : dense.vscales_t;
      d.out = TensorView::contiguous(out_pad.data(), DType::kF32, {K, R});
      d.config = cfg(f);
      st = dequantize(d);
      ASSERT_TRUE(st.ok()) << st.message();
      d.data = dense.vdata_t;
      d.out.data = out_dense.data();
      st = dequantize(d);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(0, std::memcmp(out_pad.data(), out_dense.data(), out_pad.size() * 4))
          << quant_format_name(f);
    }
  }
}

// torchao's to_blocked(): view (Rt, 128, Ct, 4) -> permute (0, 2, 1, 3) -> (Rt*Ct, 4, 32, 4)
// -> transpose(1, 2) -> (Rt*Ct, 32, 16), written out as explicit loops over that index space.
std::vector<uint8_t> to_blocked_oracle(const std::vector<uint8_t>& s, int64_t R, int64_t C) {
  const int64_t Rt = (R + 127) / 128, Ct = (C + 3) / 4;
  std::vector<uint8_t> padded(Rt * 128 * Ct * 4, 0), out;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) padded[r * Ct * 4 + c] = s[r * C + c];
  for (int64_t rt = 0; rt < Rt; ++rt)
    for (int64_t ct = 0; ct < Ct; ++ct)            // permuted (Rt, Ct, 128, 4)
      for (int64_t i32 = 0; i32 < 32; ++i32)       // after transpose(1, 2): (32, 4, 4)
        for (int64_t i4 = 0; i4 < 4; ++i4)
          for (int64_t j = 0; j < 4; ++j) {
            const int64_t row = rt * 128 + i4 * 32 + i32, col = ct * 4 + j;
            out.push_back(padded[row * Ct * 4 + col]);
          }
  return out;
}

TEST(QuantReference, SwizzleFormulaMatchesBlockedLayout) {
  std::mt19937_64 rng(dwtest::test_seed());
  for (auto [R, C] : {std::pair<int64_t, int64_t>{1, 1}, {128, 4}, {130, 5}, {300, 9}, {256, 8}, {7, 33}}) {
    std::vector<uint8_t> s(R * C);
    for (auto& b : s) b = static_cast<uint8_t>(1 + rng() % 255);  // never 0: padding shows
    const auto expect = to_blocked_oracle(s, R, C);
    std::vector<uint8_t> formula(expect.size(), 0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) formula[swizzled_scale_offset(r, c, C)] = s[r * C + c];
    EXPECT_EQ(formula, expect) << R << "x" << C;
    // Through the public conversion, both ways.
    std::vector<uint8_t> swz(expect.size(), 0xee), back(R * C, 0);
    TensorView in = TensorView::contiguous(s.data(), DType::kUE8M0, {R, C});
    TensorView out = TensorView::contiguous(swz.data(), DType::kUE8M0, {(R + 127) / 128, (C + 3) / 4, 32, 16});
    ASSERT_TRUE(swizzle_scales(in, out).ok());
    EXPECT_EQ(swz, expect);
    TensorView bk = TensorView::contiguous(back.data(), DType::kUE8M0, {R, C});
    ASSERT_TRUE(unswizzle_scales(out, bk).ok());
    EXPECT_EQ(back, s);
  }
}

TEST(QuantReference, SwizzledQuantizeMatchesRowMajorThenSwizzle) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 130, K = 160;
  auto x = randn(R * K, rng);
  for (QuantFormat f : {QuantFormat::kMxfp8, QuantFormat::kNvfp4}) {
    const DType e = f == QuantFormat::kNvfp4 ? DType::kE2M1 : DType::kE4M3;
    Quantized rm(f32_view(x, {R, K}), cfg(f), e);
    Quantized sw(f32_view(x, {R, K}), cfg(f, ScaleRule::kFloor, false, true), e);
    const int64_t C = K / (f == QuantFormat::kNvfp4 ? 16 : 32);
    EXPECT_EQ(sw.data, rm.data);
    std::vector<uint8_t> rms(rm.scales.begin(), rm.scales.begin() + R * C);
    const auto expect = to_blocked_oracle(rms, R, C);
    EXPECT_EQ(std::vector<uint8_t>(sw.scales.begin(), sw.scales.begin() + expect.size()), expect);
    EXPECT_EQ(sw.dequant(), rm.dequant());
  }
}

TEST(QuantReference, EmptyAndTinyShapes) {
  std::vector<float> x(1, 2.0f);
  Quantized r(f32_view(x, {1}), cfg(QuantFormat::kFp8Row), DType::kE4M3);
  EXPECT_EQ(r.f32_scale(0), 2.0f / 448.0f);
  EXPECT_EQ(r.code(0), 0x7e);
  Quantized e(TensorView::contiguous(nullptr, DType::kF32, {0, 64}), cfg(QuantFormat::kMxfp8), DType::kE4M3);
  EXPECT_EQ(e.shapes.scales.dims[0], 0);
  Quantized t(TensorView::contiguous(nullptr, DType::kF32, {0, 3}), cfg(QuantFormat::kFp8Tensor), DType::kE4M3);
  EXPECT_EQ(t.f32_scale(0), std::ldexp(1.0f, -126));  // amax of nothing is 0
}

TEST(QuantReference, DequantizeToHalfPrecision) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t R = 3, K = 64;
  auto x = randn(R * K, rng);
  Quantized q(f32_view(x, {R, K}), cfg(QuantFormat::kMxfp8), DType::kE4M3);
  const auto ref = q.dequant();
  for (DType dt : {DType::kBF16, DType::kF16}) {
    Buffer out(dt, R * K);
    DequantizeArgs a;
    a.data = q.vdata;
    a.scales = q.vscales;
    a.out = TensorView::contiguous(out.data(), dt, {R, K});
    a.config = q.cfg;
    ASSERT_TRUE(dequantize(a).ok());
    for (int64_t i = 0; i < R * K; ++i) {
      Buffer one(dt, 1);
      one.set(0, ref[i]);
      ASSERT_EQ(out.get(i), one.get(0));
    }
  }
}

TEST(QuantReference, ScaledGemmReference) {
  std::mt19937_64 rng(dwtest::test_seed());
  const int64_t M = 9, N = 11, K = 96;
  auto a = randn(M * K, rng), b = randn(N * K, rng);
  for (QuantFormat f : {QuantFormat::kMxfp8, QuantFormat::kFp8Block128x128, QuantFormat::kNvfp4}) {
    const DType e = f == QuantFormat::kNvfp4 ? DType::kE2M1 : DType::kE4M3;
    Quantized qa(f32_view(a, {M, K}), cfg(f), e), qb(f32_view(b, {N, K}), cfg(f), e);
    const auto da = qa.dequant(), db = qb.dequant();
    std::vector<float> d(M * N);
    ScaledGemmArgs g;
    g.a = {qa.vdata, qa.vscales, qa.shapes.has_tensor_scale ? &qa.vts : nullptr, qa.cfg};
    g.b = {qb.vdata, qb.vscales, qb.shapes.has_tensor_scale ? &qb.vts : nullptr, qb.cfg};
    g.d = f32_view(d, {M, N});
    g.alpha = 0.5f;
    Status s = scaled_gemm_reference(g);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(da[i * K + k]) * db[j * K + k];
        EXPECT_NEAR(d[i * N + j], 0.5 * acc, 1e-4 * (1 + std::fabs(acc))) << quant_format_name(f);
      }
    }
  }
}

}  // namespace
