// Core types and the exact 16-bit float conversions.
#include <cstring>

#include "helpers.hpp"

namespace {

using namespace deepwell;
using namespace deepwell::detail;

TEST(Core, DtypeNamesAndBits) {
  EXPECT_EQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_EQ(dtype_name(DType::kE4M3), "e4m3");
  EXPECT_EQ(dtype_bits(DType::kE2M1), 4);
  EXPECT_EQ(dtype_bits(DType::kF32), 32);
  EXPECT_EQ(dtype_bits(DType::kUE8M0), 8);
  EXPECT_TRUE(dtype_is_valid(9));
  EXPECT_FALSE(dtype_is_valid(10));
  EXPECT_FALSE(dtype_is_valid(-1));
}

TEST(Core, TensorViewHelpers) {
  float x[24];
  TensorView t = TensorView::contiguous(x, DType::kF32, {2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.describe(), "f32[2, 3, 4] on cpu");
  TensorView s = TensorView::strided(x, DType::kF32, {3, 2}, {1, 3});
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_NE(s.describe().find("strides (1, 3)"), std::string::npos);
  // Empty tensors are contiguous whatever their strides (torch's (4, 0) has strides (1, 1)).
  EXPECT_TRUE(TensorView::strided(x, DType::kF32, {4, 0}, {1, 1}).is_contiguous());
  EXPECT_TRUE(TensorView::strided(x, DType::kF32, {0, 3}, {1, 7}).is_contiguous());
}

TEST(Core, VersionAndBuild) {
  EXPECT_STREQ(version(), "0.1.0");
  (void)built_with_cuda();
}

TEST(Numeric, Bf16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_f32(static_cast<uint16_t>(h));
    uint16_t back = f32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(back)));
    } else {
      EXPECT_EQ(back, h);
    }
  }
}

TEST(Numeric, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    uint16_t back = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(back)));
    } else {
      EXPECT_EQ(back, h) << "code " << h;
    }
  }
}

TEST(Numeric, RoundsToNearestEven) {
  // bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // f16: 1 + 2^-11 ties to 1; 1 + 3 * 2^-11 ties up to 1 + 2^-9.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // f16 overflow and subnormals.
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);            // tie to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);            // tie to even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);         // rounds up into normals
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
}

}  // namespace
