// The quantization entry points of the C ABI: dw_quantize, dw_dequantize, dw_quantize_shapes.
#include <cmath>
#include <cstddef>
#include <string>

#include "deepwell/deepwell.h"
#include "helpers.hpp"

namespace {

bool error_has(const char* phrase) {
  return std::string(dw_last_error()).find(phrase) != std::string::npos;
}

TEST(QuantCApi, ShapesThenQuantizeThenDequantize) {
  const int64_t xs[2] = {4, 64};
  dw_quant_shapes s{};
  s.struct_size = sizeof s;
  ASSERT_EQ(dw_quantize_shapes(DW_QUANT_NVFP4, 0, 0, xs, 2, &s), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(s.scales_ndim, 2);
  EXPECT_EQ(s.scales[1], 4);
  EXPECT_EQ(s.scale_dtype, DW_DTYPE_UE4M3);
  EXPECT_EQ(s.has_tensor_scale, 1);

  float x[256], back[256], ts = 0;
  for (int i = 0; i < 256; ++i) x[i] = (i % 13) - 6.0f;
  uint8_t data[128], scales[16];
  const int64_t one = 1;
  dw_tensor tx{x, xs, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor td{data, xs, nullptr, 2, DW_DTYPE_E2M1, DW_DEVICE_CPU, 0};
  dw_tensor tsc{scales, s.scales, nullptr, 2, DW_DTYPE_UE4M3, DW_DEVICE_CPU, 0};
  dw_tensor tts{&ts, &one, nullptr, 1, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tb{back, xs, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_quantize_args q{};
  q.struct_size = sizeof q;
  q.x = &tx;
  q.data = &td;
  q.scales = &tsc;
  q.tensor_scale = &tts;
  q.format = DW_QUANT_NVFP4;
  ASSERT_EQ(dw_quantize(&q, nullptr), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(ts, 6.0f / 2688.0f);
  dw_dequantize_args d{};
  d.struct_size = sizeof d;
  d.data = &td;
  d.scales = &tsc;
  d.tensor_scale = &tts;
  d.out = &tb;
  d.format = DW_QUANT_NVFP4;
  ASSERT_EQ(dw_dequantize(&d, nullptr), DW_STATUS_OK) << dw_last_error();
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(back[i], x[i], 1.0f) << i;  // 5 is a tie: 4
}

TEST(QuantCApi, StructSizeChecked) {
  dw_quantize_args q{};
  q.struct_size = 8;
  EXPECT_EQ(dw_quantize(&q, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("struct_size"));
  dw_dequantize_args d{};
  EXPECT_EQ(dw_dequantize(&d, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(dw_dequantize(nullptr, nullptr), DW_STATUS_INVALID_ARGUMENT);
  dw_quant_shapes s{};
  const int64_t xs[1] = {32};
  EXPECT_EQ(dw_quantize_shapes(DW_QUANT_MXFP8, 0, 0, xs, 1, &s), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("struct_size"));
}

// dw_quantize_args grew `amax`: the older struct_size is still accepted (and no amax read).
TEST(QuantCApi, GivenAmaxAndOlderStructSize) {
  const int64_t xs[2] = {4, 32}, one[1] = {1};
  float x[4 * 32], scale = 0.0f, amax = 896.0f;
  for (int i = 0; i < 4 * 32; ++i) x[i] = std::sin(0.37f * i) * 300.0f;
  uint8_t data[4 * 32];
  dw_tensor tx{x, xs, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor td{data, xs, nullptr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0};
  dw_tensor ts{&scale, one, nullptr, 1, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor ta{&amax, one, nullptr, 1, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_quantize_args q{};
  q.struct_size = sizeof q;
  q.x = &tx;
  q.data = &td;
  q.scales = &ts;
  q.amax = &ta;
  q.format = DW_QUANT_FP8_TENSOR;
  ASSERT_EQ(dw_quantize(&q, nullptr), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(scale, 2.0f);  // 896 / 448
  q.struct_size = offsetof(dw_quantize_args, amax);
  ASSERT_EQ(dw_quantize(&q, nullptr), DW_STATUS_OK) << dw_last_error();
  EXPECT_LT(scale, 300.0f / 448.0f + 1e-6f);  // x's own amax: the given one was not read
  q.struct_size = offsetof(dw_quantize_args, amax) - 1;
  EXPECT_EQ(dw_quantize(&q, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("struct_size"));
}

TEST(QuantCApi, MissingTensorsAndBadEnums) {
  dw_quantize_args q{};
  q.struct_size = sizeof q;
  EXPECT_EQ(dw_quantize(&q, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'x': expected a tensor descriptor, got NULL")) << dw_last_error();
  dw_quant_shapes s{};
  s.struct_size = sizeof s;
  const int64_t xs[2] = {4, 64};
  EXPECT_EQ(dw_quantize_shapes(9, 0, 0, xs, 2, &s), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'format'"));
  EXPECT_EQ(dw_quantize_shapes(DW_QUANT_MXFP8, 0, 0, nullptr, 2, &s), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'x_shape'"));
  EXPECT_EQ(dw_quantize_shapes(DW_QUANT_MXFP8, 0, 0, xs, 9, &s), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'x_ndim'"));
  EXPECT_EQ(dw_quantize_shapes(DW_QUANT_FP8_BLOCK_1X128, 1, 0, xs, 2, &s), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'swizzle'"));
}

// A dw_quantize_args of a CPU x (R, K) f32 with e4m3 data, its scales and the caller's data_t
// (any strides) with its scales (2-D, dtype `scale_dtype`).
struct TransposedCall {
  dw_tensor x, data, scales, scales_t;
  dw_quantize_args args{};
  TransposedCall(float* xp, const int64_t* xs, uint8_t* dp, void* sp, const int64_t* ss,
                 const dw_tensor* data_t, void* stp, const int64_t* sst, dw_dtype scale_dtype,
                 int32_t format)
      : x{xp, xs, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0},
        data{dp, xs, nullptr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0},
        scales{sp, ss, nullptr, 2, scale_dtype, DW_DEVICE_CPU, 0},
        scales_t{stp, sst, nullptr, 2, scale_dtype, DW_DEVICE_CPU, 0} {
    args.struct_size = sizeof args;
    args.x = &x;
    args.data = &data;
    args.scales = &scales;
    args.data_t = data_t;
    args.scales_t = &scales_t;
    args.format = format;
  }
  TransposedCall(const TransposedCall&) = delete;  // args points into this object
};

TEST(QuantCApi, TransposedCopyAndRule) {
  const int64_t xs[2] = {32, 64}, ts_[2] = {64, 32}, ss[2] = {32, 2}, sst[2] = {64, 1};
  float x[32 * 64];
  for (int i = 0; i < 32 * 64; ++i) x[i] = std::sin(0.37f * i) * 300.0f;
  uint8_t data[32 * 64], data_t[32 * 64], sc[64], sc_t[64];
  dw_tensor tdt{data_t, ts_, nullptr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0};
  TransposedCall c(x, xs, data, sc, ss, &tdt, sc_t, sst, DW_DTYPE_U8, DW_QUANT_MXFP8);
  dw_quantize_args& q = c.args;
  q.rule = DW_SCALE_RULE_RCEIL;
  ASSERT_EQ(dw_quantize(&q, nullptr), DW_STATUS_OK) << dw_last_error();
  q.rule = 5;
  EXPECT_EQ(dw_quantize(&q, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'rule'"));
}

// FP8 data_t with padded rows through the C ABI: strides {ld, 1}, ld >= R; then dequantize reads
// that view back. Rows closer than R codes are rejected with the argument's name.
TEST(QuantCApi, TransposedCopyWithPaddedRows) {
  const int64_t R = 20, K = 128, ld = 32;
  const int64_t xs[2] = {R, K}, ts_[2] = {K, R}, tstr[2] = {ld, 1}, ss[2] = {R, 1}, sst[2] = {K, 1};
  float x[R * K], back[K * R];
  for (int i = 0; i < R * K; ++i) x[i] = std::cos(0.11f * i) * 40.0f;
  uint8_t data[R * K], data_t[K * ld];
  float sc[R], sc_t[K];
  for (auto& b : data_t) b = 0xcd;
  dw_tensor tdt{data_t, ts_, tstr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0};
  TransposedCall c(x, xs, data, sc, ss, &tdt, sc_t, sst, DW_DTYPE_F32, DW_QUANT_FP8_BLOCK_1X128);
  dw_quantize_args& q = c.args;
  ASSERT_EQ(dw_quantize(&q, nullptr), DW_STATUS_OK) << dw_last_error();
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t r = R; r < ld; ++r) ASSERT_EQ(data_t[k * ld + r], 0xcd) << "padding written";
  }
  dw_tensor tback{back, ts_, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_dequantize_args d{};
  d.struct_size = sizeof d;
  d.data = &tdt;
  d.scales = &c.scales_t;
  d.out = &tback;
  d.format = DW_QUANT_FP8_BLOCK_1X128;
  ASSERT_EQ(dw_dequantize(&d, nullptr), DW_STATUS_OK) << dw_last_error();
  for (int64_t k = 0; k < K; ++k) {  // x^T within e4m3's 3-bit mantissa
    for (int64_t r = 0; r < R; ++r) {
      EXPECT_NEAR(back[k * R + r], x[r * K + k], std::fabs(x[r * K + k]) / 16 + 40.0f / 448 * 2);
    }
  }
  const int64_t close[2] = {R - 1, 1};
  tdt.strides = close;
  EXPECT_EQ(dw_quantize(&q, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("argument 'data_t'")) << dw_last_error();
}

}  // namespace
