// CPU reference GEMM: D = act(alpha * A B + beta * C + bias) + residual, fp32 accumulation.
// B is widened to a dense fp32 [K][N] panel once per batch; rows of A are processed in blocks in
// parallel, each accumulating a [rows][N] fp32 tile with a vectorizable axpy over N.
#include <algorithm>
#include <vector>

#include "core/numeric.hpp"
#include "core/parallel.hpp"
#include "gemm/problem.hpp"

namespace deepwell::matmul {
namespace {

constexpr int64_t kRowBlock = 16;

inline float at(const Matrix& x, int64_t b, int64_t r, int64_t c) {
  return detail::load_float(x.data, x.dtype, b * x.batch_stride + r * x.row_stride + c * x.col_stride);
}

}  // namespace

Status gemm_cpu(const Problem& p) {
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<float> bpanel(static_cast<size_t>(K * N));
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    if (bi == 0 || p.b.batch_stride != 0) {
      detail::parallel_for(K, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          for (int64_t n = 0; n < N; ++n) bpanel[k * N + n] = at(p.b, bi, k, n);
        }
      }, 64);
    }
    const int64_t blocks = (M + kRowBlock - 1) / kRowBlock;
    detail::parallel_for(blocks, [&](int64_t blk0, int64_t blk1) {
      std::vector<float> acc(static_cast<size_t>(kRowBlock * N));
      std::vector<float> arow(static_cast<size_t>(K));
      for (int64_t blk = blk0; blk < blk1; ++blk) {
        const int64_t r0 = blk * kRowBlock, r1 = std::min(M, r0 + kRowBlock);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t r = r0; r < r1; ++r) {
          float* accr = acc.data() + (r - r0) * N;
          detail::load_row(p.a.data, p.a.dtype, bi * p.a.batch_stride + r * p.a.row_stride,
                           p.a.col_stride, K, arow.data());
          for (int64_t k = 0; k < K; ++k) {
            const float a = arow[k];
            const float* bk = bpanel.data() + k * N;
#pragma omp simd
            for (int64_t n = 0; n < N; ++n) accr[n] += a * bk[n];
          }
        }
        for (int64_t r = r0; r < r1; ++r) {
          const float* accr = acc.data() + (r - r0) * N;
          for (int64_t n = 0; n < N; ++n) {
            float v = p.alpha * accr[n];
            if (p.c && p.beta != 0.0f) v += p.beta * at(*p.c, bi, r, n);
            if (p.bias) v += detail::load_float(p.bias, p.bias_dtype, n * p.bias_stride);
            v = apply_activation(p.activation, v);
            if (p.residual) v += at(*p.residual, bi, r, n);
            detail::store_float(p.d.data, p.d.dtype,
                                bi * p.d.batch_stride + r * p.d.row_stride + n * p.d.col_stride, v);
          }
        }
      }
    });
  }
  return Status::Ok();
}

}  // namespace deepwell::matmul
