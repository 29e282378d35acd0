// The validated description of one GEMM call, shared by the CPU reference and the GPU kernels.
#pragma once

#include <cmath>

#include "deepwell/gemm.hpp"

namespace deepwell::matmul {

// A (batch, rows, cols) view with element strides; batch stride 0 broadcasts.
struct Matrix {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
};

struct Problem {
  Device device{};
  int64_t batch = 1, m = 0, n = 0, k = 0;
  Matrix a, b, d;
  const Matrix* c = nullptr;         // points into `c_storage` when present
  const Matrix* residual = nullptr;  // points into `residual_storage` when present
  Matrix c_storage, residual_storage;
  const void* bias = nullptr;  // (N) with stride `bias_stride`
  DType bias_dtype = DType::kF32;
  int64_t bias_stride = 1;
  float alpha = 1.0f, beta = 0.0f;
  Activation activation = Activation::kNone;
};

inline float apply_activation(Activation act, float x) {
  switch (act) {
    case Activation::kNone: return x;
    case Activation::kReLU: return x > 0.0f ? x : 0.0f;
    case Activation::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float k0 = 0.7978845608028654f, k1 = 0.044715f;
      return 0.5f * x * (1.0f + std::tanh(k0 * (x + k1 * x * x * x)));
    }
    case Activation::kSiLU: return x / (1.0f + std::exp(-x));
  }
  return x;
}

Status gemm_cpu(const Problem& p);
Status gemm_cuda(const Problem& p, const Context& ctx);

// gemm_fp8: `p` holds the fp8 operands (a, b of dtype e4m3 / e5m2) and the epilogue; the scales are
// (rows, cols) matrices with batch stride 0: kTensor (1, 1) each; kRow a (M, 1), b (1, N); kBlock a
// (M, ceil(K/128)), b (ceil(N/128), ceil(K/128)); kMx (ue8m0) a (M, ceil(K/32)), b (N, ceil(K/32)).
struct Fp8Problem {
  Problem p;
  Fp8Scaling scaling = Fp8Scaling::kTensor;
  Matrix scale_a, scale_b;
};

// Decodes both operands to fp32 with their scales applied and runs gemm_cpu.
Status gemm_fp8_cpu(const Fp8Problem& f);

#if defined(DEEPWELL_WITH_CUDA)
Status gemm_fp8_cuda(const Fp8Problem& f, const Context& ctx);
// Workspace bytes the CUDA path can use (split-K partials, transposed operand copies).
Status gemm_cuda_workspace(const Problem& p, size_t* bytes);
Status gemm_fp8_cuda_workspace(const Fp8Problem& f, size_t* bytes);
#endif

}  // namespace deepwell::matmul
