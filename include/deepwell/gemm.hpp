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

// CPU tensors run the reference; CUDA tensors the sm_90a kernels (docs/perf-notes.md, "GEMM"),
// which take bf16 or f16 a and b, a d of a's dtype or f32 (or f16 for bf16 a and b), and c,
// residual and bias of d's dtype; every operand with one unit stride, the other stride a multiple
// of 16 bytes, 16-byte aligned pointers and batch strides (bias: contiguous, aligned). K must be
// at least 1 on CUDA. Calls with no activation, no c and no residual that plan one of deepwell's
// own bf16 or fp8 tensor / row kernels without a split tail (here and in gemm_fp8) run a twin of it
// compiled for such calls only (the same bits); DEEPWELL_GEMM_PLAIN=0 turns that off.
DEEPWELL_API Status gemm(const GemmArgs& args, const Context& ctx = {});

// Scratch bytes gemm() can use for these arguments (0 for CPU tensors). Passing at least this much
// in Context::workspace lets the CUDA path split K over more SMs for small outputs (split-K /
// stream-K) and run layouts that have no kernel of their own (via a transposed copy of an operand);
// the latter fail with kInvalidArgument naming 'workspace' when it is too small. A Context with
// allocate_workspace and no workspace gets exactly this much from the allocator, without the query.
DEEPWELL_API Status gemm_workspace_size(const GemmArgs& args, size_t* bytes);

// Tuning hook for plan sweeps (bench/gemm_sweep.py): forces the kernel plan of every CUDA gemm /
// gemm_fp8 call that starts after it returns and that the kernel can run, as the environment
// variable DEEPWELL_GEMM_FORCE does for a whole process (src/gemm/gemm_tuning.hpp); same syntax,
// kernel[,dp|splitk|streamk|tail[,splits[,h|m|n[,swizzle]]]] with a row name of the kernel
// table. An empty spec removes it (the shape rules, the tuning cache and DEEPWELL_GEMM_FORCE apply again).
// Process-wide; calls already running on other threads keep the plan they chose. kInvalidArgument
// naming 'spec' when it does not parse; kNotSupported for a non-empty spec in a build without CUDA.
DEEPWELL_API Status set_gemm_plan_override(std::string_view spec);

// ------------------------------------------------------------------------------------ fp8 GEMM

// Granularity of gemm_fp8's scales; the numeric values are part of the C ABI (DW_FP8_SCALING_*).
// Scales are fp32 unless noted, on a's device, shared by every batch, and multiply the decoded
// operands: A_real[m, k] = scale_a[...] * decode(a[m, k]), likewise for B.
enum class Fp8Scaling : int32_t {
  kTensor = 0,  // scale_a (1), scale_b (1); 0-D views are accepted too
  kRow = 1,     // scale_a (M) or (M, 1): per row of A; scale_b (N) or (1, N): per column of B
  // DeepSeek-style blocks: scale_a (M, ceil(K/128)), one per row and 128 consecutive K;
  // scale_b (ceil(N/128), ceil(K/128)), one per 128x128 block of B. Any strides; the CUDA kernels
  // read scale_a with unit stride along M (columns padded to a multiple of 4 elements) and
  // scale_b with unit stride along K, and copy other layouts into the workspace first (at
  // M <= 16 scale_a is read in place with any strides).
  kBlock = 2,
  // MXFP8: ue8m0 scales, one per 32 consecutive K: scale_a (M, ceil(K/32)), scale_b (N, ceil(K/32))
  // (any strides, not swizzled). CUDA: emulated, see gemm_fp8.
  kMx = 3,
};

DEEPWELL_API std::string_view fp8_scaling_name(Fp8Scaling s);

struct GemmFp8Args {
  TensorView a;  // e4m3 or e5m2, (M, K) or (batch, M, K); CUDA: unit stride along K
  TensorView b;  // e4m3 or e5m2, (K, N) or (batch, K, N); CUDA: unit stride along K, i.e. B^T
                 // row-major (as torch._scaled_mm wants it)
  TensorView scale_a, scale_b;  // as Fp8Scaling describes
  Fp8Scaling scaling = Fp8Scaling::kTensor;
  TensorView d;                          // f32, f16 or bf16 output
  const TensorView* c = nullptr;         // optional, like d, scaled by beta
  const TensorView* bias = nullptr;      // optional (N), added per column
  const TensorView* residual = nullptr;  // optional, like d, added after the activation
  float alpha = 1.0f;
  float beta = 0.0f;
  Activation activation = Activation::kNone;
};

// D = act(alpha * A_real @ B_real + beta * C + bias) + residual with fp32 accumulation. CPU tensors
// decode both operands to fp32 and run the reference GEMM. CUDA (sm_90a), fp8 tensor cores:
// kTensor and kRow with e4m3 x e4m3 or e4m3 x e5m2 (either order when d is column-major; scales
// applied in the epilogue, products accumulated in fp32 promoted every 128 of K), kBlock with
// e4m3 x e4m3 (scales promoted in the main loop every 128 of K); a bf16, f16 or f32 d. kMx with
// e4m3 x e4m3, one batch and unit stride along K runs the kBlock kernels on a recast of both
// operands in the workspace: each 32-element sub-block's scale is folded into its fp8 data by a
// power of two so that 1x128 (A) / 128x128 (B, with a per-column factor in the epilogue) fp32
// scales carry the rest. That changes only elements below ~2^-14 of the largest magnitude in
// their row's 128-block of K (A) or in their column (B), and those by at most ~2^-18 of it
// (they round at e4m3's subnormal step); the environment variable DEEPWELL_MX_EXACT=1 turns the
// recast off. Emulated on the bf16 kernels (both operands decoded to bf16 in the workspace --
// exact, as an fp8 value times a power of two fits bf16 -- then an fp32-accumulating bf16 GEMM;
// about half the fp8 rate): the other kMx calls, and kTensor calls the fp8 kernels do not cover
// (e5m2 first). c, residual and bias have d's dtype; anything else: kNotSupported naming the
// argument.
DEEPWELL_API Status gemm_fp8(const GemmFp8Args& args, const Context& ctx = {});
DEEPWELL_API Status gemm_fp8_workspace_size(const GemmFp8Args& args, size_t* bytes);

}  // namespace deepwell
