// gemm_fp8 on CPU tensors (decode with scales, then the fp32 reference GEMM) against a direct
// float64 computation, its argument validation, and the C ABI entry points.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "deepwell/deepwell.h"
#include "helpers.hpp"
#include "quant/codec.hpp"

namespace {

using namespace dwtest;
using deepwell::Activation;
using deepwell::Fp8Scaling;
using deepwell::GemmFp8Args;
using deepwell::StatusCode;

struct Fp8Case {
  DType ea = DType::kE4M3, eb = DType::kE4M3, out = DType::kF32;
  Fp8Scaling scaling = Fp8Scaling::kTensor;
  int64_t batch = 0, M = 5, N = 7, K = 33;
  bool b_k_major = true, bias = false, c = false, residual = false;
  float alpha = 1, beta = 0;
  Activation act = Activation::kNone;
};

uint8_t random_fp8(DType dt, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const float v = dist(rng);
  return dt == DType::kE4M3 ? deepwell::quant::encode_e4m3(v) : deepwell::quant::encode_e5m2(v);
}

double decode(DType dt, uint8_t v) {
  return dt == DType::kE4M3 ? deepwell::quant::decode_e4m3(v) : deepwell::quant::decode_e5m2(v);
}

void run_case(const Fp8Case& g) {
  SCOPED_TRACE("seed " + std::to_string(test_seed()) + " scaling " +
               std::string(deepwell::fp8_scaling_name(g.scaling)) + " M " + std::to_string(g.M) +
               " N " + std::to_string(g.N) + " K " + std::to_string(g.K));
  std::mt19937_64 rng(test_seed() ^ (g.M * 7 + g.N * 131 + g.K * 17));
  const int64_t nb = g.batch ? g.batch : 1;
  std::vector<uint8_t> a(nb * g.M * g.K), b(nb * g.K * g.N);
  for (auto& v : a) v = random_fp8(g.ea, rng);
  for (auto& v : b) v = random_fp8(g.eb, rng);
  // Scales by granularity, as (rows, cols) row-major.
  int64_t sa_r = 1, sa_c = 1, sb_r = 1, sb_c = 1;
  const int64_t k128 = (g.K + 127) / 128, k32 = (g.K + 31) / 32;
  switch (g.scaling) {
    case Fp8Scaling::kTensor: break;
    case Fp8Scaling::kRow: sa_r = g.M; sb_c = g.N; break;
    case Fp8Scaling::kBlock: sa_r = g.M; sa_c = k128; sb_r = (g.N + 127) / 128; sb_c = k128; break;
    case Fp8Scaling::kMx: sa_r = g.M; sa_c = k32; sb_r = g.N; sb_c = k32; break;
  }
  std::uniform_real_distribution<float> su(0.25f, 2.0f);
  std::uniform_int_distribution<int> se(120, 134);
  std::vector<float> saf(sa_r * sa_c), sbf(sb_r * sb_c);
  std::vector<uint8_t> sau(sa_r * sa_c), sbu(sb_r * sb_c);
  for (auto& v : saf) v = su(rng);
  for (auto& v : sbf) v = su(rng);
  for (auto& v : sau) v = static_cast<uint8_t>(se(rng));
  for (auto& v : sbu) v = static_cast<uint8_t>(se(rng));
  const bool mx = g.scaling == Fp8Scaling::kMx;
  auto sa = [&](int64_t m, int64_t k) -> double {
    switch (g.scaling) {
      case Fp8Scaling::kTensor: return saf[0];
      case Fp8Scaling::kRow: return saf[m];
      case Fp8Scaling::kBlock: return saf[m * sa_c + k / 128];
      case Fp8Scaling::kMx: return deepwell::quant::decode_ue8m0(sau[m * sa_c + k / 32]);
    }
    return 0;
  };
  auto sb = [&](int64_t k, int64_t n) -> double {
    switch (g.scaling) {
      case Fp8Scaling::kTensor: return sbf[0];
      case Fp8Scaling::kRow: return sbf[n];
      case Fp8Scaling::kBlock: return sbf[(n / 128) * sb_c + k / 128];
      case Fp8Scaling::kMx: return deepwell::quant::decode_ue8m0(sbu[n * sb_c + k / 32]);
    }
    return 0;
  };

  Buffer d(g.out, nb * g.M * g.N), c(g.out, nb * g.M * g.N), r(g.out, nb * g.M * g.N),
      bias(g.out, g.N);
  fill_random(c, nb * g.M * g.N, rng);
  fill_random(r, nb * g.M * g.N, rng);
  fill_random(bias, g.N, rng);
  d.poison();
  const bool batched = g.batch != 0;
  GemmFp8Args args;
  // B (K, N): K-major (the transpose of a row-major (N, K)) or N-major.
  const int64_t b_rs = g.b_k_major ? 1 : g.N, b_cs = g.b_k_major ? g.K : 1;
  if (batched) {
    args.a = TensorView::contiguous(a.data(), g.ea, {nb, g.M, g.K});
    args.b = TensorView::strided(b.data(), g.eb, {nb, g.K, g.N}, {g.K * g.N, b_rs, b_cs});
    args.d = TensorView::contiguous(d.data(), g.out, {nb, g.M, g.N});
  } else {
    args.a = TensorView::contiguous(a.data(), g.ea, {g.M, g.K});
    args.b = TensorView::strided(b.data(), g.eb, {g.K, g.N}, {b_rs, b_cs});
    args.d = TensorView::contiguous(d.data(), g.out, {g.M, g.N});
  }
  TensorView cv = batched ? TensorView::contiguous(c.data(), g.out, {nb, g.M, g.N})
                          : TensorView::contiguous(c.data(), g.out, {g.M, g.N});
  TensorView rv = batched ? TensorView::contiguous(r.data(), g.out, {nb, g.M, g.N})
                          : TensorView::contiguous(r.data(), g.out, {g.M, g.N});
  TensorView bv = TensorView::contiguous(bias.data(), g.out, {g.N});
  const DType sdt = mx ? DType::kUE8M0 : DType::kF32;
  void* sap = mx ? static_cast<void*>(sau.data()) : static_cast<void*>(saf.data());
  void* sbp = mx ? static_cast<void*>(sbu.data()) : static_cast<void*>(sbf.data());
  switch (g.scaling) {
    case Fp8Scaling::kTensor:
      args.scale_a = TensorView::contiguous(sap, sdt, {1});
      args.scale_b = TensorView::contiguous(sbp, sdt, {1});
      break;
    case Fp8Scaling::kRow:
      args.scale_a = TensorView::contiguous(sap, sdt, {g.M});
      args.scale_b = TensorView::contiguous(sbp, sdt, {1, g.N});
      break;
    default:
      args.scale_a = TensorView::contiguous(sap, sdt, {sa_r, sa_c});
      args.scale_b = TensorView::contiguous(sbp, sdt, {sb_r, sb_c});
      break;
  }
  args.scaling = g.scaling;
  if (g.c) args.c = &cv;
  if (g.residual) args.residual = &rv;
  if (g.bias) args.bias = &bv;
  args.alpha = g.alpha, args.beta = g.beta, args.activation = g.act;
  auto st = deepwell::gemm_fp8(args);
  ASSERT_TRUE(st.ok()) << st.message();

  std::vector<double> ref(nb * g.M * g.N);
  for (int64_t i = 0; i < nb; ++i) {
    for (int64_t m = 0; m < g.M; ++m) {
      for (int64_t n = 0; n < g.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < g.K; ++k) {
          const double av = decode(g.ea, a[(i * g.M + m) * g.K + k]) * sa(m, k);
          const double bv_ = decode(g.eb, b[i * g.K * g.N + k * b_rs + n * b_cs]) * sb(k, n);
          acc += av * bv_;
        }
        const int64_t o = (i * g.M + m) * g.N + n;
        double v = g.alpha * acc;
        if (g.c) v += g.beta * c.get(o);
        if (g.bias) v += bias.get(n);
        v = act64(g.act, v);
        if (g.residual) v += r.get(o);
        ref[o] = v;
      }
    }
  }
  const ErrorStats e = compare(nb * g.M * g.N, [&](int64_t i) { return d.get(i); }, ref);
  EXPECT_EQ(e.nonfinite, 0);
  EXPECT_LE(e.rel_l2, output_tolerance(g.out)) << "max abs " << e.max_abs;
}

TEST(GemmFp8Reference, TensorScaling) { run_case({}); }

TEST(GemmFp8Reference, RowScalingE4m3xE5m2) {
  Fp8Case g;
  g.eb = DType::kE5M2;
  g.scaling = Fp8Scaling::kRow;
  g.out = DType::kBF16;
  run_case(g);
}

TEST(GemmFp8Reference, BlockScalingPartialBlocks) {
  Fp8Case g;
  g.scaling = Fp8Scaling::kBlock;
  g.M = 9, g.N = 130, g.K = 300;  // K and N not multiples of 128
  run_case(g);
}

TEST(GemmFp8Reference, MxScaling) {
  Fp8Case g;
  g.scaling = Fp8Scaling::kMx;
  g.K = 70;  // not a multiple of 32
  g.ea = DType::kE5M2;
  run_case(g);
}

TEST(GemmFp8Reference, FusedEpilogueBatchedNMajorB) {
  Fp8Case g;
  g.batch = 3;
  g.b_k_major = false;
  g.bias = g.c = g.residual = true;
  g.alpha = 0.5f, g.beta = -1.5f;
  g.act = Activation::kGeluTanh;
  g.out = DType::kF16;
  g.scaling = Fp8Scaling::kRow;
  run_case(g);
}

TEST(GemmFp8Reference, EveryActivation) {
  for (Activation act : {Activation::kReLU, Activation::kGeluErf, Activation::kSiLU}) {
    Fp8Case g;
    g.act = act;
    g.bias = true;
    run_case(g);
  }
}

// ----------------------------------------------------------------------------------- validation

struct Fixture {
  alignas(64) uint8_t a[6 * 8] = {}, b[8 * 10] = {};
  alignas(64) float d[6 * 10], sa[64] = {}, sb[64] = {};
  GemmFp8Args g;
  Fixture() {
    g.a = TensorView::contiguous(a, DType::kE4M3, {6, 8});
    g.b = TensorView::contiguous(b, DType::kE4M3, {8, 10});
    g.d = TensorView::contiguous(d, DType::kF32, {6, 10});
    g.scale_a = TensorView::contiguous(sa, DType::kF32, {1});
    g.scale_b = TensorView::contiguous(sb, DType::kF32, {1});
  }
  deepwell::Status run() { return deepwell::gemm_fp8(g); }
};

void expect_error(const deepwell::Status& s, StatusCode code, const std::string& arg,
                  const std::string& phrase) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find("argument '" + arg + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(phrase), std::string::npos) << s.message();
}

TEST(GemmFp8Validation, ValidCallSucceeds) {
  Fixture f;
  EXPECT_TRUE(f.run().ok());
}

TEST(GemmFp8Validation, OperandsMustBeFp8) {
  Fixture f;
  f.g.a.dtype = DType::kBF16;
  expect_error(f.run(), StatusCode::kInvalidDType, "a", "e4m3");
}

TEST(GemmFp8Validation, ScaleDtype) {
  Fixture f;
  f.g.scale_a.dtype = DType::kBF16;
  expect_error(f.run(), StatusCode::kInvalidDType, "scale_a", "f32");
  Fixture g;
  g.g.scaling = Fp8Scaling::kMx;
  g.g.scale_a = TensorView::contiguous(g.sa, DType::kF32, {6, 1});
  g.g.scale_b = TensorView::contiguous(g.sb, DType::kUE8M0, {10, 1});
  expect_error(g.run(), StatusCode::kInvalidDType, "scale_a", "ue8m0");
}

TEST(GemmFp8Validation, ScaleShapes) {
  Fixture f;
  f.g.scale_b = TensorView::contiguous(f.sb, DType::kF32, {2});
  expect_error(f.run(), StatusCode::kInvalidArgument, "scale_b", "'tensor'");
  Fixture g;
  g.g.scaling = Fp8Scaling::kRow;
  g.g.scale_a = TensorView::contiguous(g.sa, DType::kF32, {10});
  g.g.scale_b = TensorView::contiguous(g.sb, DType::kF32, {10});
  expect_error(g.run(), StatusCode::kInvalidArgument, "scale_a", "(M) or (M, 1)");
  Fixture h;
  h.g.scaling = Fp8Scaling::kBlock;
  h.g.scale_a = TensorView::contiguous(h.sa, DType::kF32, {6, 1});
  h.g.scale_b = TensorView::contiguous(h.sb, DType::kF32, {10, 1});  // should be (1, 1)
  expect_error(h.run(), StatusCode::kInvalidArgument, "scale_b", "ceil(N/128)");
}

TEST(GemmFp8Validation, ScalingCode) {
  Fixture f;
  f.g.scaling = static_cast<Fp8Scaling>(7);
  expect_error(f.run(), StatusCode::kInvalidArgument, "scaling", "tensor, row, block, mx");
}

TEST(GemmFp8Validation, WorkspaceQueryOnCpuIsZero) {
  Fixture f;
  size_t bytes = 123;
  ASSERT_TRUE(deepwell::gemm_fp8_workspace_size(f.g, &bytes).ok());
  EXPECT_EQ(bytes, 0u);
}

// ------------------------------------------------------------------------------------------ C ABI

TEST(GemmFp8CApi, RunsOnCpuAndReportsErrors) {
  uint8_t a[2 * 16], b[16 * 3];
  float d[2 * 3], sa = 2.0f, sb = 0.5f;
  for (int i = 0; i < 32; ++i) a[i] = deepwell::quant::encode_e4m3(1.0f);
  for (int i = 0; i < 48; ++i) b[i] = deepwell::quant::encode_e4m3(0.5f);
  int64_t ash[2] = {2, 16}, bsh[2] = {16, 3}, dsh[2] = {2, 3}, ssh[1] = {1};
  dw_tensor ta{a, ash, nullptr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0};
  dw_tensor tb{b, bsh, nullptr, 2, DW_DTYPE_E4M3, DW_DEVICE_CPU, 0};
  dw_tensor td{d, dsh, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tsa{&sa, ssh, nullptr, 1, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tsb{&sb, ssh, nullptr, 1, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_gemm_fp8_args g;
  std::memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.a = &ta;
  g.b = &tb;
  g.scale_a = &tsa;
  g.scale_b = &tsb;
  g.scaling = DW_FP8_SCALING_TENSOR;
  g.d = &td;
  g.alpha = 1.0f;
  ASSERT_EQ(dw_gemm_fp8(&g, nullptr), DW_STATUS_OK) << dw_last_error();
  for (float v : d) EXPECT_FLOAT_EQ(v, 16 * 1.0f * 2.0f * 0.5f * 0.5f);
  size_t bytes = 7;
  ASSERT_EQ(dw_gemm_fp8_workspace_size(&g, &bytes), DW_STATUS_OK);
  EXPECT_EQ(bytes, 0u);
  g.scale_b = nullptr;
  EXPECT_EQ(dw_gemm_fp8(&g, nullptr), DW_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dw_last_error()).find("scale_b"), std::string::npos);
  g.struct_size = 8;
  EXPECT_EQ(dw_gemm_fp8(&g, nullptr), DW_STATUS_INVALID_ARGUMENT);
}

TEST(GemmCApi, WorkspaceFieldsAreOptional) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, d[4];
  int64_t sh[2] = {2, 2};
  dw_tensor ta{a, sh, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor tb{b, sh, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_tensor td{d, sh, nullptr, 2, DW_DTYPE_F32, DW_DEVICE_CPU, 0};
  dw_gemm_args g;
  std::memset(&g, 0, sizeof g);
  g.struct_size = offsetof(dw_gemm_args, workspace);  // a caller built against 0.1
  g.a = &ta;
  g.b = &tb;
  g.d = &td;
  g.alpha = 1.0f;
  ASSERT_EQ(dw_gemm(&g, nullptr), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(d[3], 4.0f);
  size_t bytes = 1;
  g.struct_size = sizeof g;
  ASSERT_EQ(dw_gemm_workspace_size(&g, &bytes), DW_STATUS_OK) << dw_last_error();
  EXPECT_EQ(bytes, 0u);
}

}  // namespace
