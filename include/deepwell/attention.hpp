// Fused multi-head attention (forward and backward).
//
// Layout is BSHD with arbitrary strides: q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D), out like q.
// Variable-length batches pack the sequences: q (total_q, Hq, D), k and v (total_k, Hkv, D), with
// cu_seqlens_q / cu_seqlens_k (int32, B + 1 entries, starting at 0, non-decreasing).
//
// Masking follows FlashAttention 2.1+: query row i of a sequence may see key j when
//   i + (Sk - Sq) - window_left <= j <= i + (Sk - Sq) + window_right
// (a negative window side is unbounded; causal sets window_right = 0, i.e. bottom-right aligned).
// A row that sees no key produces 0 in `out` and -inf in `lse`.
#pragma once

#include <limits>

#include "deepwell/core.hpp"

namespace deepwell {

struct AttentionMask {
  bool causal = false;
  int64_t window_left = -1;   // < 0: unbounded
  int64_t window_right = -1;  // < 0: unbounded; causal forces 0
};

struct AttentionForwardArgs {
  TensorView q, k, v;  // f32, f16 or bf16 (CUDA: f16 or bf16); last dimension contiguous
  TensorView out;      // same dtype and shape as q
  const TensorView* lse = nullptr;  // optional fp32 (B, Hq, Sq), or (Hq, total_q) for varlen
  const TensorView* cu_seqlens_q = nullptr;  // optional int32 (B + 1): varlen when given
  const TensorView* cu_seqlens_k = nullptr;  // required exactly when cu_seqlens_q is given
  int64_t max_seqlen_q = -1;  // varlen: upper bound on every q length (required on CUDA)
  int64_t max_seqlen_k = -1;  // varlen: upper bound on every k length (required on CUDA)
  const TensorView* bias = nullptr;  // optional additive bias (B|1, Hq|1, Sq, Sk); CPU only
  float softmax_scale = std::numeric_limits<float>::quiet_NaN();  // NaN: 1/sqrt(D)
  AttentionMask mask{};
};

DEEPWELL_API Status attention_forward(const AttentionForwardArgs& args, const Context& ctx = {});

// Scratch bytes attention_forward can use for these arguments (0 on CPU, and on CUDA when it would
// not split). On CUDA, calls with too few query tiles to fill the GPU (decoding: a few query rows
// against long keys) split each tile's keys into ranges that run in parallel, and merge them in a
// second kernel; the partial results need this much scratch in Context::workspace, or
// Context::allocate_workspace. Calls without a mask whose tiles leave the GPU's last round of
// tiles partly idle split only that round's tiles (a split tail, merged inside the kernel) and
// need scratch too. Without it (or with a smaller workspace) the call runs unsplit: the same
// results within rounding, slower. DEEPWELL_ATTN_SPLITS=<n> forces n ranges,
// DEEPWELL_ATTN_TAIL_SPLITS=<n> n tail ranges (0: no tail). Unsplit calls at head dims up to 128
// below 8k keys with fixed lengths, no mask or window and keys a multiple of 128 run twins of their
// kernels compiled for such calls only (the same bits); DEEPWELL_ATTN_DENSE=0 turns that off.
// Other unsplit fixed-length calls at head dims above 64 (masks, windows; a right-bounded mask
// only where the last query tile's idle rows are fewer than a key tile) likewise run twins
// compiled without the variable-length and split code; DEEPWELL_ATTN_FIXED=0 turns those off.
DEEPWELL_API Status attention_forward_workspace_size(const AttentionForwardArgs& args,
                                                     size_t* bytes);

struct AttentionBackwardArgs {
  TensorView q, k, v, out, dout;  // as in the forward; dout like out
  TensorView lse;                 // fp32, as returned by the forward
  TensorView dq, dk, dv;          // like q, k, v (GQA: dk, dv summed over each group)
  const TensorView* cu_seqlens_q = nullptr;
  const TensorView* cu_seqlens_k = nullptr;
  int64_t max_seqlen_q = -1;
  int64_t max_seqlen_k = -1;
  const TensorView* bias = nullptr;  // no gradient is computed for the bias
  float softmax_scale = std::numeric_limits<float>::quiet_NaN();
  AttentionMask mask{};
};

// CPU only in this version; CUDA tensors give kNotSupported.
DEEPWELL_API Status attention_backward(const AttentionBackwardArgs& args, const Context& ctx = {});

}  // namespace deepwell
