// The CPU reference GEMM against a direct float64 computation.
#include "helpers.hpp"

namespace {

using namespace dwtest;
using deepwell::Activation;
using deepwell::GemmArgs;

struct GemmCase {
  DType in = DType::kF32, out = DType::kF32;
  int64_t batch = 0, M = 1, N = 1, K = 1;  // batch 0: 2-D operands
  bool a_col_major = false, b_col_major = false, b_broadcast = false;
  bool bias = false, c = false, residual = false;
  float alpha = 1, beta = 0;
  Activation act = Activation::kNone;
};

void run_case(const GemmCase& g) {
  SCOPED_TRACE("seed " + std::to_string(test_seed()) + " M " + std::to_string(g.M) + " N " +
               std::to_string(g.N) + " K " + std::to_string(g.K));
  std::mt19937_64 rng(test_seed() ^ (g.M * 131 + g.N * 17 + g.K));
  const int64_t nb = g.batch ? g.batch : 1;
  const int64_t bb = g.b_broadcast ? 1 : nb;
  Buffer a(g.in, nb * g.M * g.K), b(g.in, bb * g.K * g.N), d(g.out, nb * g.M * g.N);
  Buffer c(DType::kF32, nb * g.M * g.N), r(DType::kBF16, nb * g.M * g.N), bias(DType::kF32, g.N);
  fill_random(a, nb * g.M * g.K, rng);
  fill_random(b, bb * g.K * g.N, rng);
  fill_random(c, nb * g.M * g.N, rng);
  fill_random(r, nb * g.M * g.N, rng);
  fill_random(bias, g.N, rng);
  d.poison();
  auto mat = [&](Buffer& buf, DType dt, int64_t nbatch, int64_t rows, int64_t cols, bool col_major,
                 bool batch_dim) {
    const int64_t rs = col_major ? 1 : cols, cs = col_major ? rows : 1;
    if (!batch_dim) return TensorView::strided(buf.data(), dt, {rows, cols}, {rs, cs});
    return TensorView::strided(buf.data(), dt, {nbatch, rows, cols}, {rows * cols, rs, cs});
  };
  const bool batched = g.batch != 0;
  GemmArgs args;
  args.a = mat(a, g.in, nb, g.M, g.K, g.a_col_major, batched);
  args.b = mat(b, g.in, bb, g.K, g.N, g.b_col_major, batched && !g.b_broadcast);
  args.d = mat(d, g.out, nb, g.M, g.N, false, batched);
  TensorView cv = mat(c, DType::kF32, nb, g.M, g.N, false, batched);
  TensorView rv = mat(r, DType::kBF16, nb, g.M, g.N, false, batched);
  TensorView bv = TensorView::contiguous(bias.data(), DType::kF32, {g.N});
  if (g.c) args.c = &cv;
  if (g.residual) args.residual = &rv;
  if (g.bias) args.bias = &bv;
  args.alpha = g.alpha, args.beta = g.beta, args.activation = g.act;
  auto st = deepwell::gemm(args);
  ASSERT_TRUE(st.ok()) << st.message();

  std::vector<double> ref;
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ib = g.b_broadcast ? 0 : i;
    for (int64_t m = 0; m < g.M; ++m) {
      for (int64_t n = 0; n < g.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < g.K; ++k) {
          const int64_t ai = i * g.M * g.K + (g.a_col_major ? k * g.M + m : m * g.K + k);
          const int64_t bi = ib * g.K * g.N + (g.b_col_major ? n * g.K + k : k * g.N + n);
          acc += a.get(ai) * b.get(bi);
        }
        const int64_t o = (i * g.M + m) * g.N + n;
        double v = g.alpha * acc;
        if (g.c) v += g.beta * c.get(o);
        if (g.bias) v += bias.get(n);
        v = act64(g.act, v);
        if (g.residual) v += r.get(o);
        ref.push_back(v);
      }
    }
  }
  ErrorStats e = compare(ref.size(), [&](int64_t i) { return d.get(i); }, ref);
  EXPECT_EQ(e.nonfinite, 0);
  EXPECT_LE(e.rel_l2, output_tolerance(g.out) + (g.in == DType::kF32 ? 0 : 0));
}

TEST(GemmReference, OddShapes) {
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {7, 13, 5}, {33, 1, 70}, {1, 65, 129}, {100, 37, 64}}) {
    GemmCase g;
    g.M = M, g.N = N, g.K = K;
    run_case(g);
  }
}

TEST(GemmReference, ColumnMajorOperands) {
  for (bool ac : {false, true}) {
    for (bool bc : {false, true}) {
      GemmCase g;
      g.M = 19, g.N = 23, g.K = 31, g.a_col_major = ac, g.b_col_major = bc;
      run_case(g);
    }
  }
}

TEST(GemmReference, BatchedAndBroadcast) {
  GemmCase g;
  g.batch = 3, g.M = 9, g.N = 11, g.K = 17;
  run_case(g);
  g.b_broadcast = true;
  run_case(g);
}

TEST(GemmReference, EveryActivationWithBiasAndResidual) {
  for (Activation act : {Activation::kNone, Activation::kReLU, Activation::kGeluErf,
                         Activation::kGeluTanh, Activation::kSiLU}) {
    GemmCase g;
    g.M = 21, g.N = 18, g.K = 40, g.act = act, g.bias = true, g.residual = true;
    g.alpha = 0.5f;
    run_case(g);
  }
}

TEST(GemmReference, BetaC) {
  GemmCase g;
  g.M = 16, g.N = 16, g.K = 8, g.c = true, g.beta = -1.5f, g.alpha = 2.0f;
  run_case(g);
}

TEST(GemmReference, LowPrecisionInputsAndOutputs) {
  for (DType in : {DType::kBF16, DType::kF16}) {
    for (DType out : {DType::kF32, DType::kBF16, DType::kF16}) {
      GemmCase g;
      g.in = in, g.out = out, g.M = 33, g.N = 47, g.K = 513;
      g.bias = true, g.act = Activation::kGeluTanh;
      run_case(g);
    }
  }
}

TEST(GemmReference, EmptyKGivesEpilogueOnly) {
  GemmCase g;
  g.M = 4, g.N = 5, g.K = 0, g.bias = true, g.act = Activation::kReLU;
  run_case(g);
}

}  // namespace
