// The C ABI: versioning, error reporting, descriptors, and the seed-style fmha entry point.
#include <cstddef>
#include <thread>

#include "deepwell/deepwell.h"
#include "helpers.hpp"

namespace {

TEST(CApi, Version) {
  EXPECT_STREQ(dw_version(), "0.1.0");
  EXPECT_EQ(dw_abi_version(), DW_ABI_VERSION);
}

TEST(CApi, NullArgsStruct) {
  EXPECT_EQ(dw_attention_fwd(nullptr, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("argument 'args'"), std::string::npos);
}

TEST(CApi, StructSizeTooSmall) {
  dw_gemm_args a{};
  a.struct_size = 8;
  EXPECT_EQ(dw_gemm(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("struct_size"), std::string::npos);
}

TEST(CApi, GemmPlanOverride) {
  EXPECT_EQ(dw_gemm_set_plan_override(nullptr), DW_STATUS_OK);
  EXPECT_EQ(dw_gemm_set_plan_override(""), DW_STATUS_OK);
  const dw_status s = dw_gemm_set_plan_override("no_such_kernel");
  if (s == DW_STATUS_NOT_SUPPORTED) {  // a build without CUDA
    EXPECT_NE(std::string(dw_last_error()).find("no CUDA kernels"), std::string::npos);
    return;
  }
  EXPECT_EQ(s, DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("argument 'spec'"), std::string::npos)
      << dw_last_error();
  EXPECT_EQ(dw_gemm_set_plan_override("bf16_kk_bf16_128x256,streamk"), DW_STATUS_OK);
  EXPECT_EQ(dw_gemm_set_plan_override(nullptr), DW_STATUS_OK);
}

TEST(CApi, MissingRequiredTensor) {
  dw_attention_fwd_args a{};
  a.struct_size = sizeof a;
  EXPECT_EQ(dw_attention_fwd(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("argument 'q': expected a tensor descriptor, got NULL"),
            std::string::npos) << dw_last_error();
}

TEST(CApi, AttentionWorkspaceFieldsAreOptional) {
  // A CPU call (no scratch) through the full struct, the size query, and the pre-workspace struct.
  float q[1 * 3 * 2 * 8], o[1 * 3 * 2 * 8];
  for (int i = 0; i < 48; ++i) q[i] = 0.01f * static_cast<float>(i);
  int64_t shape[4] = {1, 3, 2, 8};
  dw_tensor tq{q, shape, nullptr, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor to{o, shape, nullptr, 4, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_attention_fwd_args a{};
  a.struct_size = sizeof a;
  a.q = a.k = a.v = &tq;
  a.out = &to;
  a.max_seqlen_q = a.max_seqlen_k = a.window_left = a.window_right = -1;
  size_t bytes = 7;
  ASSERT_EQ(dw_attention_fwd_workspace_size(&a, &bytes), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(dw_attention_fwd_workspace_size(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(dw_attention_fwd(&a, nullptr), DW_STATUS_OK) << dw_last_error();
  a.struct_size = offsetof(dw_attention_fwd_args, workspace);
  a.workspace = reinterpret_cast<void*>(0x1);  // past the caller's struct_size: never read
  EXPECT_EQ(dw_attention_fwd(&a, nullptr), DW_STATUS_OK) << dw_last_error();
  a.struct_size = offsetof(dw_attention_fwd_args, workspace) - 1;
  EXPECT_EQ(dw_attention_fwd(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
}

TEST(CApi, BadDescriptorFields) {
  float x[4];
  int64_t shape[2] = {2, 2};
  dw_tensor t{x, shape, nullptr, 9, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_gemm_args a{};
  a.struct_size = sizeof a;
  a.a = a.b = a.d = &t;
  EXPECT_EQ(dw_gemm(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("ndim between 0 and 8"), std::string::npos);
  t.ndim = 2;
  t.dtype = 77;
  EXPECT_EQ(dw_gemm(&a, nullptr), DW_STATUS_INVALID_DTYPE);
  t.dtype = DW_DTYPE_F32;
  t.shape = nullptr;
  EXPECT_EQ(dw_gemm(&a, nullptr), DW_STATUS_INVALID_ARGUMENT);
}

TEST(CApi, LastErrorIsThreadLocalAndClearedOnSuccess) {
  EXPECT_EQ(dw_attention_fwd(nullptr, nullptr), DW_STATUS_INVALID_ARGUMENT);
  std::string other;
  std::thread([&] { other = dw_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(dw_last_error()), "");
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, d[4];
  int64_t shape[2] = {2, 2};
  dw_tensor ta{a, shape, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tb{b, shape, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor td{d, shape, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_gemm_args g{};
  g.struct_size = sizeof g;
  g.a = &ta, g.b = &tb, g.d = &td, g.alpha = 1.0f;
  ASSERT_EQ(dw_gemm(&g, nullptr), DW_STATUS_OK) << dw_last_error();
  EXPECT_STREQ(dw_last_error(), "");
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(d[1], 2);
  EXPECT_EQ(d[2], 3);
  EXPECT_EQ(d[3], 4);
}

TEST(CApi, FmhaBhsdMatchesBshd) {
  const int64_t B = 2, H = 3, S = 11, D = 16, n = B * H * S * D;
  std::vector<uint16_t> q(n), k(n), v(n), o1(n), o2(n), qb(n), kb(n), vb(n);
  std::mt19937_64 rng(dwtest::test_seed());
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < n; ++i) {
    q[i] = deepwell::detail::f32_to_bf16(dist(rng));
    k[i] = deepwell::detail::f32_to_bf16(dist(rng));
    v[i] = deepwell::detail::f32_to_bf16(dist(rng));
  }
  // BHSD copies of the BSHD tensors.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) {
          int64_t bshd = ((b * S + s) * H + h) * D + d, bhsd = ((b * H + h) * S + s) * D + d;
          qb[bhsd] = q[bshd], kb[bhsd] = k[bshd], vb[bhsd] = v[bshd];
        }
  ASSERT_EQ(dw_fmha_forward(q.data(), k.data(), v.data(), o1.data(), DW_DTYPE_BF16, DW_DEVICE_CPU,
                            B, H, S, S, D, 1, 1, nullptr), DW_STATUS_OK) << dw_last_error();
  ASSERT_EQ(dw_fmha_forward(qb.data(), kb.data(), vb.data(), o2.data(), DW_DTYPE_BF16,
                            DW_DEVICE_CPU, B, H, S, S, D, 0, 1, nullptr), DW_STATUS_OK);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(o1[((b * S + s) * H + h) * D + d], o2[((b * H + h) * S + s) * D + d]);
  EXPECT_EQ(dw_fmha_forward(q.data(), k.data(), v.data(), o1.data(), DW_DTYPE_BF16, DW_DEVICE_CPU,
                            B, H, S, S, D, 2, 1, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("argument 'layout'"), std::string::npos);
  EXPECT_EQ(dw_fmha_forward(q.data(), k.data(), v.data(), o1.data(), DW_DTYPE_BF16, DW_DEVICE_CPU,
                            B, -H, S, S, D, 1, 1, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("argument 'heads'"), std::string::npos);
}

}  // namespace
