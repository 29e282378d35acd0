// One test per validation rule of gemm.
#include <limits>
#include <string>
#include <utility>

#include "helpers.hpp"

namespace {

using namespace deepwell;

constexpr int64_t M = 6, N = 10, K = 8;

struct Fixture {
  alignas(64) float a[M * K] = {}, b[K * N] = {}, d[M * N], c[M * N] = {}, bias[N] = {};
  GemmArgs g;
  Fixture() {
    g.a = TensorView::contiguous(a, DType::kF32, {M, K});
    g.b = TensorView::contiguous(b, DType::kF32, {K, N});
    g.d = TensorView::contiguous(d, DType::kF32, {M, N});
  }
  Status run() { return gemm(g); }
};

void expect_error(const Status& s, StatusCode code, const std::string& arg,
                  const std::string& phrase) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find("argument '" + arg + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(phrase), std::string::npos) << s.message();
}

TEST(GemmValidation, ValidCallSucceeds) {
  Fixture f;
  EXPECT_TRUE(f.run().ok());
}

TEST(GemmValidation, BadRank) {
  Fixture f;
  f.g.a.ndim = 1;
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "2-D or 3-D");
}

TEST(GemmValidation, InnerDimensionMismatch) {
  Fixture f;
  f.g.b = TensorView::contiguous(f.b, DType::kF32, {K - 1, N});
  expect_error(f.run(), StatusCode::kInvalidArgument, "b", "K = 8");
}

TEST(GemmValidation, OutputShapeMismatch) {
  Fixture f;
  f.g.d = TensorView::contiguous(f.d, DType::kF32, {M, N - 1});
  expect_error(f.run(), StatusCode::kInvalidArgument, "d", "(M, N) = (6, 10)");
}

TEST(GemmValidation, BatchedInputNeedsBatchedOutput) {
  Fixture f;
  f.g.a = TensorView::contiguous(f.a, DType::kF32, {1, M, K});
  expect_error(f.run(), StatusCode::kInvalidArgument, "d", "3-D");
}

TEST(GemmValidation, BatchMismatch) {
  Fixture f;
  float a2[3 * M * K], d2[2 * M * N];
  f.g.a = TensorView::contiguous(a2, DType::kF32, {3, M, K});
  f.g.d = TensorView::contiguous(d2, DType::kF32, {2, M, N});
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "batch of 2 or 1");
}

TEST(GemmValidation, DtypeMismatch) {
  Fixture f;
  f.g.b.dtype = DType::kBF16;
  expect_error(f.run(), StatusCode::kInvalidDType, "b", "dtype f32");
}

TEST(GemmValidation, UnsupportedDtype) {
  Fixture f;
  f.g.a.dtype = f.g.b.dtype = DType::kI32;
  expect_error(f.run(), StatusCode::kInvalidDType, "a", "f32, f16 or bf16");
}

TEST(GemmValidation, OutputDtype) {
  Fixture f;
  f.g.d.dtype = DType::kE4M3;
  expect_error(f.run(), StatusCode::kInvalidDType, "d", "f32, f16 or bf16");
}

TEST(GemmValidation, DeviceMismatch) {
  Fixture f;
  f.g.d.device = {DeviceType::kCUDA, 0};
  expect_error(f.run(), StatusCode::kInvalidArgument, "d", "on cpu");
}

TEST(GemmValidation, NegativeSize) {
  Fixture f;
  f.g.a.shape[0] = -1;
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "non-negative sizes");
}

TEST(GemmValidation, OverflowingSizes) {
  Fixture f;
  f.g.b.shape[1] = std::numeric_limits<int64_t>::max() / 2;
  f.g.b.strides[0] = 4;
  expect_error(f.run(), StatusCode::kInvalidArgument, "b", "64 bits");
}

TEST(GemmValidation, NullPointer) {
  Fixture f;
  f.g.a.data = nullptr;
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "non-null");
}

TEST(GemmValidation, OutputOverlapsInput) {
  Fixture f;
  f.g.d = TensorView::contiguous(f.a, DType::kF32, {M, N - 2});
  f.g.b = TensorView::contiguous(f.b, DType::kF32, {K, N - 2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "d", "disjoint from 'a'");
}

TEST(GemmValidation, OutputWithRepeatedElements) {
  Fixture f;
  f.g.d.strides[0] = 0;
  expect_error(f.run(), StatusCode::kInvalidArgument, "d", "stride-0");
}

TEST(GemmValidation, BiasShape) {
  Fixture f;
  TensorView b = TensorView::contiguous(f.bias, DType::kF32, {N - 1});
  f.g.bias = &b;
  expect_error(f.run(), StatusCode::kInvalidArgument, "bias", "(N)");
}

TEST(GemmValidation, CShape) {
  Fixture f;
  TensorView c = TensorView::contiguous(f.c, DType::kF32, {N, M});
  f.g.c = &c;
  f.g.beta = 1;
  expect_error(f.run(), StatusCode::kInvalidArgument, "c", "(M, N)");
}

TEST(GemmValidation, ResidualPartialOverlap) {
  Fixture f;
  TensorView r = TensorView::strided(f.d, DType::kF32, {M, N}, {1, M});
  f.g.residual = &r;
  expect_error(f.run(), StatusCode::kInvalidArgument, "residual", "in place");
}

TEST(GemmValidation, ResidualInPlaceAccepted) {
  Fixture f;
  for (float& x : f.d) x = 1.0f;
  TensorView r = f.g.d;
  f.g.residual = &r;
  ASSERT_TRUE(f.run().ok());
  EXPECT_EQ(f.d[0], 1.0f);  // A = 0, so D = 0 + residual
}

TEST(GemmValidation, NonFiniteAlpha) {
  Fixture f;
  f.g.alpha = std::numeric_limits<float>::quiet_NaN();
  expect_error(f.run(), StatusCode::kInvalidArgument, "alpha", "finite");
}

TEST(GemmValidation, UnknownActivation) {
  Fixture f;
  f.g.activation = static_cast<Activation>(17);
  expect_error(f.run(), StatusCode::kInvalidArgument, "activation", "relu");
}

// set_gemm_plan_override: the spec's syntax, field by field (no GPU needed: parsing only).
TEST(GemmValidation, PlanOverrideSpec) {
  ASSERT_TRUE(set_gemm_plan_override("").ok());
  if (!built_with_cuda()) {
    const Status s = set_gemm_plan_override("bf16_kk_bf16_128x256");
    EXPECT_EQ(s.code(), StatusCode::kNotSupported);
    EXPECT_NE(s.message().find("no CUDA kernels"), std::string::npos) << s.message();
    return;
  }
  EXPECT_TRUE(set_gemm_plan_override("bf16_kk_bf16_128x256").ok());
  EXPECT_TRUE(set_gemm_plan_override("bf16_kk_bf16_128x256,streamk,1,m,4").ok());
  EXPECT_TRUE(set_gemm_plan_override("e4m3_kk_bf16_ws_128x192,dp").ok());
  const std::pair<const char*, const char*> bad[] = {
      {"no_such_kernel", "no kernel named 'no_such_kernel'"},
      {",dp", "no kernel named ''"},
      {"bf16_kk_bf16_128x256,sideways", "decomposition 'sideways'"},
      {"bf16_kk_bf16_128x256,splitk,0", "splits '0'"},
      {"bf16_kk_bf16_128x256,splitk,3x", "splits '3x'"},
      {"bf16_kk_bf16_128x256,splitk,99999999999", "splits '99999999999'"},
      {"bf16_kk_bf16_128x256,dp,1,x", "raster 'x'"},
      {"bf16_kk_bf16_128x256,dp,1,h,3", "swizzle '3'"},
      {"bf16_kk_bf16_128x256,dp,1,h,1,9", "more than 5"},
  };
  for (const auto& [spec, why] : bad) {
    const Status s = set_gemm_plan_override(spec);
    expect_error(s, StatusCode::kInvalidArgument, "spec", why);
    EXPECT_NE(s.message().find(std::string("'") + spec + "'"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(set_gemm_plan_override("").ok());
}

}  // namespace
