// The CUDA-only argument checks of gemm and gemm_fp8 (src/gemm/dispatch_cuda.cpp). Every view here
// claims to live on cuda:0 but points at host memory: each call must be rejected by validation,
// before any CUDA call, so these tests run (and must pass) with or without a GPU. Builds without
// CUDA reject every CUDA call up front, so the checks are only meaningful with the kernels built.
#include <cstring>
#include <string>

#include "helpers.hpp"

namespace {

using namespace deepwell;

constexpr Device kCuda{DeviceType::kCUDA, 0};
constexpr int64_t M = 32, N = 64, K = 48;

bool cuda_build() { return built_with_cuda(); }

void expect_error(const Status& s, StatusCode code, const std::string& arg,
                  const std::string& phrase) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find("argument '" + arg + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(phrase), std::string::npos) << s.message();
}

// Host buffers, 256-byte aligned, viewed as CUDA tensors.
struct alignas(256) Storage {
  uint8_t bytes[1 << 16];
};

struct Fixture16 {
  Storage a, b, d, c, r, bias;
  GemmArgs g;
  TensorView cv, rv, bv;
  explicit Fixture16(DType in = DType::kBF16, DType out = DType::kBF16) {
    g.a = TensorView::contiguous(a.bytes, in, {M, K}, kCuda);
    g.b = TensorView::contiguous(b.bytes, in, {K, N}, kCuda);
    g.d = TensorView::contiguous(d.bytes, out, {M, N}, kCuda);
    cv = TensorView::contiguous(c.bytes, out, {M, N}, kCuda);
    rv = TensorView::contiguous(r.bytes, out, {M, N}, kCuda);
    bv = TensorView::contiguous(bias.bytes, out, {N}, kCuda);
  }
  Status run() { return gemm(g); }
};

#define SKIP_WITHOUT_CUDA_BUILD() \
  if (!cuda_build()) GTEST_SKIP() << "built without CUDA kernels"

TEST(GemmCudaValidation, F32OperandsAreNotSupported) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f(DType::kF32, DType::kF32);
  expect_error(f.run(), StatusCode::kNotSupported, "a", "bf16 or f16");
}

TEST(GemmCudaValidation, CrossOutputDtypeIsNotSupported) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f(DType::kF16, DType::kBF16);  // no f16 x f16 -> bf16 kernel
  expect_error(f.run(), StatusCode::kNotSupported, "d", "output for these operands");
}

// A workspace allocator is only asked for memory once the call is valid and planned.
TEST(GemmCudaValidation, WorkspaceAllocatorNotCalledOnInvalidInput) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a.data = f.a.bytes + 2;  // misaligned
  int calls = 0;
  Context ctx;
  ctx.allocate_workspace = [](size_t, void* user) -> void* {
    ++*static_cast<int*>(user);
    return nullptr;
  };
  ctx.allocator_user = &calls;
  expect_error(gemm(f.g, ctx), StatusCode::kInvalidArgument, "a", "16-byte aligned");
  EXPECT_EQ(calls, 0);
}

TEST(GemmCudaValidation, EmptyReductionIsNotSupported) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a = TensorView::contiguous(f.a.bytes, DType::kBF16, {M, 0}, kCuda);
  f.g.b = TensorView::contiguous(f.b.bytes, DType::kBF16, {0, N}, kCuda);
  expect_error(f.run(), StatusCode::kNotSupported, "a", "K >= 1");
}

TEST(GemmCudaValidation, MisalignedPointer) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a.data = f.a.bytes + 2;
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "16-byte aligned");
  Fixture16 g;
  g.g.d.data = g.d.bytes + 8;
  expect_error(g.run(), StatusCode::kInvalidArgument, "d", "16-byte aligned");
}

TEST(GemmCudaValidation, LeadingDimensionNotAMultipleOf16Bytes) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a = TensorView::contiguous(f.a.bytes, DType::kBF16, {M, 12}, kCuda);  // K = 12: 24-byte rows
  f.g.b = TensorView::contiguous(f.b.bytes, DType::kBF16, {12, N}, kCuda);
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "multiple of 8 elements");
  Fixture16 g;
  g.g.b = TensorView::strided(g.b.bytes, DType::kBF16, {K, N}, {N + 4, 1}, kCuda);
  expect_error(g.run(), StatusCode::kInvalidArgument, "b", "multiple of 8 elements");
  Fixture16 h(DType::kBF16, DType::kF32);
  h.g.d = TensorView::strided(h.d.bytes, DType::kF32, {M, N}, {N + 2, 1}, kCuda);
  expect_error(h.run(), StatusCode::kInvalidArgument, "d", "multiple of 4 elements");
}

TEST(GemmCudaValidation, NoUnitStride) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a = TensorView::strided(f.a.bytes, DType::kBF16, {M, K}, {2 * K, 2}, kCuda);
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "one unit stride");
  Fixture16 g;
  g.g.d = TensorView::strided(g.d.bytes, DType::kBF16, {M, N}, {2 * N, 2}, kCuda);
  expect_error(g.run(), StatusCode::kInvalidArgument, "d", "one unit stride");
}

TEST(GemmCudaValidation, BatchStrideNotAMultipleOf16Bytes) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.a = TensorView::strided(f.a.bytes, DType::kBF16, {2, M, 8}, {M * 8 + 4, 8, 1}, kCuda);
  f.g.b = TensorView::contiguous(f.b.bytes, DType::kBF16, {8, N}, kCuda);
  f.g.d = TensorView::contiguous(f.d.bytes, DType::kBF16, {2, M, N}, kCuda);
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "batch stride");
}

TEST(GemmCudaValidation, BiasMustHaveTheOutputDtypeAndBeContiguous) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  TensorView b32 = TensorView::contiguous(f.bias.bytes, DType::kF32, {N}, kCuda);
  f.g.bias = &b32;
  expect_error(f.run(), StatusCode::kNotSupported, "bias", "the dtype of 'd'");
  Fixture16 g;
  TensorView strided = TensorView::strided(g.bias.bytes, DType::kBF16, {N}, {2}, kCuda);
  g.g.bias = &strided;
  expect_error(g.run(), StatusCode::kInvalidArgument, "bias", "stride 1");
}

TEST(GemmCudaValidation, EpilogueOperandsMustMatchTheOutput) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  TensorView c32 = TensorView::contiguous(f.c.bytes, DType::kF32, {M, N}, kCuda);
  f.g.c = &c32;
  f.g.beta = 1.0f;
  expect_error(f.run(), StatusCode::kNotSupported, "c", "the dtype of 'd'");
  Fixture16 g;
  TensorView ccol = TensorView::strided(g.c.bytes, DType::kBF16, {M, N}, {1, M}, kCuda);
  g.g.c = &ccol;
  g.g.beta = 1.0f;
  expect_error(g.run(), StatusCode::kInvalidArgument, "c", "the layout of 'd'");
  Fixture16 h;
  TensorView rmis = TensorView::contiguous(h.r.bytes + 4, DType::kBF16, {M, N}, kCuda);
  h.g.residual = &rmis;
  expect_error(h.run(), StatusCode::kInvalidArgument, "residual", "16-byte aligned");
}

TEST(GemmCudaValidation, ResidualInPlaceWithADistinctC) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture16 f;
  f.g.c = &f.cv;
  f.g.beta = 0.5f;
  f.g.residual = &f.g.d;  // residual = d, c elsewhere: one source only in the epilogue
  expect_error(f.run(), StatusCode::kNotSupported, "residual", "other than 'd'");
}

// ------------------------------------------------------------------------------------- gemm_fp8

struct Fixture8 {
  Storage a, b, d, sa, sb;
  GemmFp8Args g;
  Fixture8(DType ea = DType::kE4M3, DType eb = DType::kE4M3, DType out = DType::kBF16) {
    g.a = TensorView::contiguous(a.bytes, ea, {M, K}, kCuda);
    // B (K, N) with unit stride along K: the transpose of a row-major (N, K).
    g.b = TensorView::strided(b.bytes, eb, {K, N}, {1, K}, kCuda);
    g.d = TensorView::contiguous(d.bytes, out, {M, N}, kCuda);
    g.scale_a = TensorView::contiguous(sa.bytes, DType::kF32, {1}, kCuda);
    g.scale_b = TensorView::contiguous(sb.bytes, DType::kF32, {1}, kCuda);
  }
  Status run() { return gemm_fp8(g); }
};

TEST(GemmFp8CudaValidation, E5m2FirstOperandNeedsASwap) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture8 f(DType::kE5M2, DType::kE4M3);
  f.g.scaling = Fp8Scaling::kRow;  // (tensor scaling would run on the bf16 kernels)
  f.g.scale_a = TensorView::contiguous(f.sa.bytes, DType::kF32, {M}, kCuda);
  f.g.scale_b = TensorView::contiguous(f.sb.bytes, DType::kF32, {N}, kCuda);
  expect_error(f.run(), StatusCode::kNotSupported, "a", "e4m3 for 'a'");
}

TEST(GemmFp8CudaValidation, BlockScalingIsE4m3Only) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture8 f(DType::kE4M3, DType::kE5M2);
  f.g.scaling = Fp8Scaling::kBlock;
  f.g.scale_a = TensorView::contiguous(f.sa.bytes, DType::kF32, {M, 1}, kCuda);
  f.g.scale_b = TensorView::contiguous(f.sb.bytes, DType::kF32, {1, 1}, kCuda);
  expect_error(f.run(), StatusCode::kNotSupported, "b", "e4m3 for 'b'");
}

TEST(GemmFp8CudaValidation, BlockScalingNeedsARowMajorOutput) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture8 f;
  f.g.scaling = Fp8Scaling::kBlock;
  f.g.scale_a = TensorView::contiguous(f.sa.bytes, DType::kF32, {M, 1}, kCuda);
  f.g.scale_b = TensorView::contiguous(f.sb.bytes, DType::kF32, {1, 1}, kCuda);
  f.g.d = TensorView::strided(f.d.bytes, DType::kBF16, {M, N}, {1, M}, kCuda);
  expect_error(f.run(), StatusCode::kNotSupported, "d", "row-major d");
}

TEST(GemmFp8CudaValidation, RowScalesMustBeContiguous) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture8 f;
  f.g.scaling = Fp8Scaling::kRow;
  f.g.scale_a = TensorView::strided(f.sa.bytes, DType::kF32, {M}, {2}, kCuda);
  f.g.scale_b = TensorView::contiguous(f.sb.bytes, DType::kF32, {N}, kCuda);
  expect_error(f.run(), StatusCode::kInvalidArgument, "scale_a", "contiguous vector");
}

TEST(GemmFp8CudaValidation, OperandAlignment) {
  SKIP_WITHOUT_CUDA_BUILD();
  Fixture8 f;
  f.g.a = TensorView::contiguous(f.a.bytes, DType::kE4M3, {M, 40}, kCuda);  // 40-byte rows
  f.g.b = TensorView::strided(f.b.bytes, DType::kE4M3, {40, N}, {1, 40}, kCuda);
  expect_error(f.run(), StatusCode::kInvalidArgument, "a", "multiple of 16 elements");
  Fixture8 g;
  g.g.b.data = g.b.bytes + 8;
  expect_error(g.run(), StatusCode::kInvalidArgument, "b", "16-byte aligned");
}

}  // namespace
