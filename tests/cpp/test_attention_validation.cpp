// One test per validation rule of attention_forward / attention_backward. Each starts from a valid
// call and breaks exactly one thing; the error must name the argument and what was expected.
// CUDA-only rules use CUDA-device views with host memory: validation rejects them before any
// CUDA call, so these tests run without a GPU.
#include <limits>

#include "helpers.hpp"

namespace {

using namespace deepwell;

constexpr int64_t B = 2, S = 8, H = 4, D = 16;

struct Fixture {
  alignas(64) float q[B * S * H * D], k[B * S * H * D], v[B * S * H * D], out[B * S * H * D];
  alignas(64) float lse[B * H * S];
  AttentionForwardArgs a;
  TensorView lse_view;
  Fixture() {
    for (auto* p : {q, k, v}) {
      for (int64_t i = 0; i < B * S * H * D; ++i) p[i] = 0.01f * static_cast<float>(i % 97);
    }
    a.q = TensorView::contiguous(q, DType::kF32, {B, S, H, D});
    a.k = TensorView::contiguous(k, DType::kF32, {B, S, H, D});
    a.v = TensorView::contiguous(v, DType::kF32, {B, S, H, D});
    a.out = TensorView::contiguous(out, DType::kF32, {B, S, H, D});
    lse_view = TensorView::contiguous(lse, DType::kF32, {B, H, S});
    a.lse = &lse_view;
  }
  Status run() { return attention_forward(a); }
};

void expect_error(const Status& s, StatusCode code, const std::string& arg,
                  const std::string& phrase) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find("argument '" + arg + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(phrase), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("got"), std::string::npos) << s.message();
}

TEST(AttentionValidation, ValidCallSucceeds) {
  Fixture f;
  Status s = f.run();
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(AttentionValidation, WorkspaceSize) {
  Fixture f;
  size_t bytes = 123;
  Status s = attention_forward_workspace_size(f.a, &bytes);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(bytes, 0u);  // CPU: no scratch
  expect_error(attention_forward_workspace_size(f.a, nullptr), StatusCode::kInvalidArgument,
               "bytes", "pointer");
  f.a.q.ndim = 2;  // the size query validates like the call
  expect_error(attention_forward_workspace_size(f.a, &bytes), StatusCode::kInvalidArgument, "q",
               "4-D tensor");
}

TEST(AttentionValidation, BadRank) {
  Fixture f;
  f.a.q.ndim = 2;
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "4-D tensor");
}

TEST(AttentionValidation, KRankDiffersFromQ) {
  Fixture f;
  f.a.k = TensorView::contiguous(f.k, DType::kF32, {B * S, H, D});
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "4-D");
}

TEST(AttentionValidation, HeadDimMismatch) {
  Fixture f;
  f.a.k = TensorView::contiguous(f.k, DType::kF32, {B, S, H * 2, D / 2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "head_dim");
}

TEST(AttentionValidation, BatchMismatch) {
  Fixture f;
  f.a.k = TensorView::contiguous(f.k, DType::kF32, {1, S * 2, H, D});
  f.a.v = TensorView::contiguous(f.v, DType::kF32, {1, S * 2, H, D});
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "batch");
}

TEST(AttentionValidation, VShapeMismatch) {
  Fixture f;
  f.a.v = TensorView::contiguous(f.v, DType::kF32, {B, S / 2, H, D});
  expect_error(f.run(), StatusCode::kInvalidArgument, "v", "sequence");
}

TEST(AttentionValidation, KvHeadsMustDivideQueryHeads) {
  Fixture f;
  f.a.k = TensorView::contiguous(f.k, DType::kF32, {B, S, 3, D});
  f.a.v = TensorView::contiguous(f.v, DType::kF32, {B, S, 3, D});
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "divides");
}

TEST(AttentionValidation, OutShapeMismatch) {
  Fixture f;
  f.a.out = TensorView::contiguous(f.out, DType::kF32, {B, S, H, D / 2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "out", "shape");
}

TEST(AttentionValidation, DtypeNotSupported) {
  Fixture f;
  f.a.q.dtype = f.a.k.dtype = f.a.v.dtype = f.a.out.dtype = DType::kI32;
  expect_error(f.run(), StatusCode::kInvalidDType, "q", "dtype");
}

TEST(AttentionValidation, DtypeMismatch) {
  Fixture f;
  f.a.k.dtype = DType::kBF16;
  expect_error(f.run(), StatusCode::kInvalidDType, "k", "dtype f32");
}

TEST(AttentionValidation, UnknownDtypeCode) {
  Fixture f;
  f.a.q.dtype = static_cast<DType>(42);
  expect_error(f.run(), StatusCode::kInvalidDType, "q", "dtype code");
}

TEST(AttentionValidation, DeviceMismatch) {
  Fixture f;
  f.a.v.device = {DeviceType::kCUDA, 0};
  expect_error(f.run(), StatusCode::kInvalidArgument, "v", "cpu");
}

TEST(AttentionValidation, UnknownDevice) {
  Fixture f;
  f.a.q.device = {static_cast<DeviceType>(7), 0};
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "CPU or CUDA");
}

TEST(AttentionValidation, NegativeSize) {
  Fixture f;
  f.a.k.shape[1] = -3;
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "non-negative sizes");
}

TEST(AttentionValidation, NegativeStride) {
  Fixture f;
  f.a.q.strides[1] = -64;
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "non-negative strides");
}

TEST(AttentionValidation, OverflowingSizes) {
  Fixture f;
  f.a.q.shape[0] = int64_t{1} << 40;
  f.a.q.strides[0] = int64_t{1} << 40;
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "64 bits");
}

TEST(AttentionValidation, NullPointer) {
  Fixture f;
  f.a.v.data = nullptr;
  expect_error(f.run(), StatusCode::kInvalidArgument, "v", "non-null");
}

TEST(AttentionValidation, TooManyDims) {
  Fixture f;
  f.a.q.ndim = 9;
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "0 to 8 dimensions");
}

TEST(AttentionValidation, LseShape) {
  Fixture f;
  f.lse_view = TensorView::contiguous(f.lse, DType::kF32, {B, S, H});
  expect_error(f.run(), StatusCode::kInvalidArgument, "lse", "(B, Hq, Sq)");
}

TEST(AttentionValidation, LseDtype) {
  Fixture f;
  f.lse_view.dtype = DType::kBF16;
  expect_error(f.run(), StatusCode::kInvalidDType, "lse", "f32");
}

TEST(AttentionValidation, OutOverlapsInput) {
  Fixture f;
  f.a.out.data = f.q;
  expect_error(f.run(), StatusCode::kInvalidArgument, "out", "does not overlap 'q'");
}

TEST(AttentionValidation, OutWithRepeatedElements) {
  Fixture f;
  f.a.out.strides[1] = 0;
  expect_error(f.run(), StatusCode::kInvalidArgument, "out", "stride-0");
}

TEST(AttentionValidation, InfiniteScale) {
  Fixture f;
  f.a.softmax_scale = std::numeric_limits<float>::infinity();
  expect_error(f.run(), StatusCode::kInvalidArgument, "softmax_scale", "finite");
}

TEST(AttentionValidation, CausalWithRightWindow) {
  Fixture f;
  f.a.mask = {true, -1, 4};
  expect_error(f.run(), StatusCode::kInvalidArgument, "window_right", "causal");
}

TEST(AttentionValidation, ZeroHeadDim) {
  Fixture f;
  for (auto* t : {&f.a.q, &f.a.k, &f.a.v, &f.a.out}) *t = TensorView::contiguous(t->data, DType::kF32, {B, S, H, 0});
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "head dimension");
}

// ------------------------------------------------------------------------------ bias rules
TEST(AttentionValidation, BiasShape) {
  Fixture f;
  float bias[B * H * S * S];
  TensorView b = TensorView::contiguous(bias, DType::kF32, {B, H, S, S + 1});
  f.a.bias = &b;
  expect_error(f.run(), StatusCode::kInvalidArgument, "bias", "(B|1, Hq|1, Sq, Sk)");
}

TEST(AttentionValidation, BiasRank) {
  Fixture f;
  float bias[S * S];
  TensorView b = TensorView::contiguous(bias, DType::kF32, {S, S});
  f.a.bias = &b;
  expect_error(f.run(), StatusCode::kInvalidArgument, "bias", "4-D");
}

TEST(AttentionValidation, BiasBroadcastAccepted) {
  Fixture f;
  float bias[S * S] = {};
  TensorView b = TensorView::contiguous(bias, DType::kF32, {1, 1, S, S});
  f.a.bias = &b;
  Status s = f.run();
  EXPECT_TRUE(s.ok()) << s.message();
}

// ---------------------------------------------------------------------------- varlen rules
struct VarlenFixture : Fixture {
  int32_t cuq[3] = {0, 5, 16}, cuk[3] = {0, 9, 16};
  TensorView cq, ck;
  VarlenFixture() {
    a.q = TensorView::contiguous(q, DType::kF32, {B * S, H, D});
    a.k = TensorView::contiguous(k, DType::kF32, {B * S, H, D});
    a.v = TensorView::contiguous(v, DType::kF32, {B * S, H, D});
    a.out = TensorView::contiguous(out, DType::kF32, {B * S, H, D});
    lse_view = TensorView::contiguous(lse, DType::kF32, {H, B * S});
    cq = TensorView::contiguous(cuq, DType::kI32, {3});
    ck = TensorView::contiguous(cuk, DType::kI32, {3});
    a.cu_seqlens_q = &cq;
    a.cu_seqlens_k = &ck;
  }
};

TEST(AttentionValidation, VarlenValidCallSucceeds) {
  VarlenFixture f;
  Status s = f.run();
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(AttentionValidation, VarlenNeeds3D) {
  VarlenFixture f;
  f.a.q = TensorView::contiguous(f.q, DType::kF32, {B, S, H, D});
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "3-D tensor (total_q, Hq, D)");
}

TEST(AttentionValidation, CuSeqlensGivenAlone) {
  VarlenFixture f;
  f.a.cu_seqlens_k = nullptr;
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_k", "together");
}

TEST(AttentionValidation, CuSeqlensDtype) {
  VarlenFixture f;
  f.cq.dtype = DType::kF32;
  expect_error(f.run(), StatusCode::kInvalidDType, "cu_seqlens_q", "i32");
}

TEST(AttentionValidation, CuSeqlensSizesDiffer) {
  VarlenFixture f;
  f.ck = TensorView::contiguous(f.cuk, DType::kI32, {2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_k", "batch + 1");
}

TEST(AttentionValidation, CuSeqlensNonContiguous) {
  VarlenFixture f;
  int32_t spread[6] = {0, 0, 5, 0, 16, 0};
  f.cq = TensorView::strided(spread, DType::kI32, {3}, {2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_q", "contiguous");
}

TEST(AttentionValidation, CuSeqlensDecreasing) {
  VarlenFixture f;
  f.cuq[1] = 10, f.cuq[2] = 7;
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_q", "non-decreasing");
}

TEST(AttentionValidation, CuSeqlensPastTheEnd) {
  VarlenFixture f;
  f.cuk[2] = 17;
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_k", "at most 16");
}

TEST(AttentionValidation, CuSeqlensNotStartingAtZero) {
  VarlenFixture f;
  f.cuq[0] = 1;
  expect_error(f.run(), StatusCode::kInvalidArgument, "cu_seqlens_q", "first entry of 0");
}

TEST(AttentionValidation, MaxSeqlenTooSmall) {
  VarlenFixture f;
  f.a.max_seqlen_q = 3;
  expect_error(f.run(), StatusCode::kInvalidArgument, "max_seqlen_q", "longest");
}

TEST(AttentionValidation, VarlenLseShape) {
  VarlenFixture f;
  f.lse_view = TensorView::contiguous(f.lse, DType::kF32, {B, H, S});
  expect_error(f.run(), StatusCode::kInvalidArgument, "lse", "(Hq, total_q)");
}

TEST(AttentionValidation, VarlenWithBiasNotSupported) {
  VarlenFixture f;
  float bias[S * S];
  TensorView b = TensorView::contiguous(bias, DType::kF32, {1, 1, S, S});
  f.a.bias = &b;
  expect_error(f.run(), StatusCode::kNotSupported, "bias", "variable-length");
}

// ------------------------------------------------------------------------------ CUDA rules
struct CudaFixture : Fixture {
  CudaFixture() {
    for (auto* t : {&a.q, &a.k, &a.v, &a.out}) {
      t->dtype = DType::kBF16;
      t->device = {DeviceType::kCUDA, 0};
    }
    lse_view.device = {DeviceType::kCUDA, 0};
  }
};

TEST(AttentionValidation, CudaRejectsF32) {
  CudaFixture f;
  for (auto* t : {&f.a.q, &f.a.k, &f.a.v, &f.a.out}) t->dtype = DType::kF32;
  expect_error(f.run(), StatusCode::kInvalidDType, "q", "bf16 or f16");
}

TEST(AttentionValidation, CudaHeadDimLimit) {
  CudaFixture f;
  for (auto* t : {&f.a.q, &f.a.k, &f.a.v, &f.a.out}) {
    *t = TensorView::contiguous(t->data, DType::kBF16, {1, 2, 1, 264}, {DeviceType::kCUDA, 0});
  }
  expect_error(f.run(), StatusCode::kNotSupported, "q", "at most 256");
}

TEST(AttentionValidation, CudaHeadDimMultipleOf8) {
  CudaFixture f;
  for (auto* t : {&f.a.q, &f.a.k, &f.a.v, &f.a.out}) {
    *t = TensorView::contiguous(t->data, DType::kBF16, {2, 4, 2, 20}, {DeviceType::kCUDA, 0});
  }
  expect_error(f.run(), StatusCode::kNotSupported, "q", "multiple of 8");
}

TEST(AttentionValidation, CudaLastDimContiguous) {
  CudaFixture f;
  f.a.k.strides[3] = 2;
  expect_error(f.run(), StatusCode::kInvalidArgument, "k", "contiguous last dimension");
}

TEST(AttentionValidation, CudaMisalignedPointer) {
  CudaFixture f;
  f.a.v.data = reinterpret_cast<char*>(f.v) + 2;
  expect_error(f.run(), StatusCode::kInvalidArgument, "v", "aligned to 16 bytes");
}

TEST(AttentionValidation, CudaMisalignedStride) {
  CudaFixture f;
  f.a.q.strides[1] = H * D + 4;  // 8 bytes: not a multiple of 16
  f.a.q.shape[0] = 1;
  expect_error(f.run(), StatusCode::kInvalidArgument, "q", "multiples of 16 bytes");
}

TEST(AttentionValidation, CudaBiasNotSupported) {
  CudaFixture f;
  float bias[S * S];
  TensorView b = TensorView::contiguous(bias, DType::kF32, {1, 1, S, S}, {DeviceType::kCUDA, 0});
  f.a.bias = &b;
  expect_error(f.run(), StatusCode::kNotSupported, "bias", "CPU backend");
}

TEST(AttentionValidation, CudaVarlenNeedsMaxSeqlen) {
  VarlenFixture f;
  for (auto* t : {&f.a.q, &f.a.k, &f.a.v, &f.a.out}) {
    t->dtype = DType::kBF16;
    t->device = {DeviceType::kCUDA, 0};
  }
  f.cq.device = f.ck.device = f.lse_view.device = {DeviceType::kCUDA, 0};
  expect_error(f.run(), StatusCode::kInvalidArgument, "max_seqlen_q", "non-negative bound");
}

TEST(AttentionValidation, CudaBackwardNotSupported) {
  CudaFixture f;
  AttentionBackwardArgs b;
  b.q = f.a.q, b.k = f.a.k, b.v = f.a.v, b.out = f.a.out, b.dout = f.a.out;
  b.lse = f.lse_view, b.dq = f.a.q, b.dk = f.a.k, b.dv = f.a.v;
  Status s = attention_backward(b);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported);
  EXPECT_NE(s.message().find("CPU backend"), std::string::npos);
}

// -------------------------------------------------------------------------- backward rules
TEST(AttentionValidation, BackwardGradientShape) {
  Fixture f;
  ASSERT_TRUE(f.run().ok());
  float dq[B * S * H * D], dk[B * S * H * D], dv[B * S * H * D], dout[B * S * H * D] = {};
  AttentionBackwardArgs b;
  b.q = f.a.q, b.k = f.a.k, b.v = f.a.v, b.out = f.a.out, b.lse = f.lse_view;
  b.dout = TensorView::contiguous(dout, DType::kF32, {B, S, H, D});
  b.dq = TensorView::contiguous(dq, DType::kF32, {B, S, H, D});
  b.dk = TensorView::contiguous(dk, DType::kF32, {B, S, H, D / 2});
  b.dv = TensorView::contiguous(dv, DType::kF32, {B, S, H, D});
  expect_error(attention_backward(b), StatusCode::kInvalidArgument, "dk", "shape");
}

TEST(AttentionValidation, BackwardGradientOverlapsInput) {
  Fixture f;
  ASSERT_TRUE(f.run().ok());
  float dk[B * S * H * D], dv[B * S * H * D], dout[B * S * H * D] = {};
  AttentionBackwardArgs b;
  b.q = f.a.q, b.k = f.a.k, b.v = f.a.v, b.out = f.a.out, b.lse = f.lse_view;
  b.dout = TensorView::contiguous(dout, DType::kF32, {B, S, H, D});
  b.dq = f.a.q;  // in place over q: not allowed
  b.dk = TensorView::contiguous(dk, DType::kF32, {B, S, H, D});
  b.dv = TensorView::contiguous(dv, DType::kF32, {B, S, H, D});
  expect_error(attention_backward(b), StatusCode::kInvalidArgument, "dq", "overlap 'q'");
}

}  // namespace
