// CPU reference GEMM: D = act(alpha * A B + beta * C + bias) + residual, fp32 accumulation.
// B is widened to a dense fp32 [K][N] panel once per batch; rows of A are processed in blocks in
// parallel, each accumulating a [rows][N] fp32 tile with a vectorizable axpy over N.
#include <algorithm>
#include <vector>

#include "core/numeric.hpp"
#include "core/parallel.hpp"
#include "gemm/problem.hpp"
#include "quant/codec.hpp"

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

// ------------------------------------------------------------------------------------- gemm_fp8
// CPU reference of gemm_fp8: both operands are decoded to fp32 with their scales applied (the fp8
// and ue8m0 codecs of src/quant/codec.hpp), then multiplied by gemm_cpu above.
#include "quant/codec.hpp"

namespace deepwell::matmul {
namespace {

float decode_fp8(DType dt, uint8_t v) {
  return dt == DType::kE4M3 ? quant::decode_e4m3(v) : quant::decode_e5m2(v);
}

float scale_at(const Fp8Problem& f, bool is_a, int64_t row, int64_t col, int64_t k) {
  const Matrix& s = is_a ? f.scale_a : f.scale_b;
  // (row, col) index the operand as A (M, K) or B (K, N).
  int64_t r = 0, c = 0;
  switch (f.scaling) {
    case Fp8Scaling::kTensor: break;
    case Fp8Scaling::kRow: if (is_a) r = row; else c = col; break;
    case Fp8Scaling::kBlock: if (is_a) { r = row; c = k / 128; } else { r = col / 128; c = k / 128; } break;
    case Fp8Scaling::kMx: if (is_a) { r = row; c = k / 32; } else { r = col; c = k / 32; } break;
  }
  const int64_t off = r * s.row_stride + c * s.col_stride;
  if (f.scaling == Fp8Scaling::kMx) {
    return quant::decode_ue8m0(static_cast<const uint8_t*>(s.data)[off]);
  }
  return static_cast<const float*>(s.data)[off];
}

// Dense fp32 copy of an fp8 operand (batch, rows, cols), keeping a broadcast batch broadcast.
std::vector<float> decode_operand(const Fp8Problem& f, bool is_a, int64_t rows, int64_t cols,
                                  Matrix* out) {
  const Matrix& x = is_a ? f.p.a : f.p.b;
  const int64_t nb = x.batch_stride == 0 ? 1 : f.p.batch;
  std::vector<float> buf(static_cast<size_t>(nb * rows * cols));
  const auto* src = static_cast<const uint8_t*>(x.data);
  detail::parallel_for(nb * rows, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t b = i / rows, r = i % rows;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = decode_fp8(x.dtype, src[b * x.batch_stride + r * x.row_stride + c * x.col_stride]);
        // A (M, K): row = m, k = c. B (K, N): k = r, col = n.
        const float s = is_a ? scale_at(f, true, r, 0, c) : scale_at(f, false, 0, c, r);
        buf[static_cast<size_t>(i * cols + c)] = v * s;
      }
    }
  }, 16);
  out->data = buf.data();
  out->dtype = DType::kF32;
  out->batch_stride = nb == 1 ? 0 : rows * cols;
  out->row_stride = cols;
  out->col_stride = 1;
  return buf;
}

}  // namespace

Status gemm_fp8_cpu(const Fp8Problem& f) {
  Problem p;
  p.device = f.p.device;
  p.batch = f.p.batch;
  p.m = f.p.m;
  p.n = f.p.n;
  p.k = f.p.k;
  p.d = f.p.d;
  if (f.p.c) {
    p.c_storage = *f.p.c;
    p.c = &p.c_storage;
  }
  if (f.p.residual) {
    p.residual_storage = *f.p.residual;
    p.residual = &p.residual_storage;
  }
  p.bias = f.p.bias;
  p.bias_dtype = f.p.bias_dtype;
  p.bias_stride = f.p.bias_stride;
  p.alpha = f.p.alpha;
  p.beta = f.p.beta;
  p.activation = f.p.activation;
  std::vector<float> a = decode_operand(f, true, f.p.m, f.p.k, &p.a);
  std::vector<float> b = decode_operand(f, false, f.p.k, f.p.n, &p.b);
  return gemm_cpu(p);
}

}  // namespace deepwell::matmul
