// General matrix multiply with a fused epilogue:
//   D = act(alpha * A @ B + beta * C + bias) + residual
// A is (M, K) or (batch, M, K), B is (K, N) or (batch, K, N), D is (M, N) or (batch, M, N).
// Row- and column-major operands are both expressed through strides (a column-major A has
// strides (1, M)); a batch stride of 0 broadcasts an operand over the batch.
#pragma once

#include "deepwell/core.hpp"

namespace deepwell {

enum class Activation : int32_t {
  kNone = 0,
  kReLU = 1,
  kGeluErf = 2,   // 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh = 3,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kSiLU = 4,      // x * sigmoid(x)
};

DEEPWELL_API std::string_view activation_name(Activation a);

struct GemmArgs {
  TensorView a, b;  // f32, f16 or bf16, same dtype
  TensorView d;     // f32, f16 or bf16 output: its dtype selects the output type
  const TensorView* c = nullptr;         // optional, shaped like d (batch stride may be 0), scaled by beta
  const TensorView* bias = nullptr;      // optional (N), added per column
  const TensorView* residual = nullptr;  // optional, shaped like d, added after the activation
  float alpha = 1.0f;
  float beta = 0.0f;
  Activation activation = Activation::kNone;
};

// CPU in this version; CUDA tensors give kNotSupported until the GPU GEMMs land.
DEEPWELL_API Status gemm(const GemmArgs& args, const Context& ctx = {});

}  // namespace deepwell
