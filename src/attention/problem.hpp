// The validated, normalized description of one attention call, shared by the CPU reference and the
// GPU kernels. Built only by attention.cpp after every argument check has passed.
#pragma once

#include <cstdint>

#include "deepwell/attention.hpp"

namespace deepwell::attention {

// Element strides of a BSHD-like tensor. For varlen tensors `batch` is 0 and rows are offset by
// cu_seqlens instead.
struct RowStrides {
  int64_t batch = 0, row = 0, head = 0, elem = 1;
};

struct Problem {
  DType dtype = DType::kBF16;
  Device device{};
  int64_t batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  int64_t seqlen_q = 0, seqlen_k = 0;  // fixed-length sizes, or the max lengths for varlen
  int64_t total_q = 0, total_k = 0;    // rows in q / k as stored (varlen: packed rows)
  bool varlen = false;
  const int32_t* cu_seqlens_q = nullptr;  // on `device`
  const int32_t* cu_seqlens_k = nullptr;

  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  RowStrides q_stride, k_stride, v_stride, o_stride;

  float* lse = nullptr;  // optional; (B, H, S) or (H, total) with the strides below
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;

  const TensorView* bias = nullptr;  // CPU only; broadcast dims have size 1

  float scale = 1.0f;
  bool causal = false;
  int64_t window_left = -1;   // < 0: unbounded
  int64_t window_right = -1;  // < 0: unbounded (causal: 0)

  int64_t group() const { return heads_q / heads_kv; }
};

// Backward adds the gradient tensors and dout.
struct BackwardProblem {
  Problem fwd;  // q, k, v, out, lse (required), masks
  const void* dout = nullptr;
  RowStrides do_stride;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  RowStrides dq_stride, dk_stride, dv_stride;
};

// Key range [lo, hi) visible from query row i of a sequence pair with lengths (sq, sk).
inline void visible_keys(const Problem& p, int64_t i, int64_t sq, int64_t sk, int64_t* lo,
                         int64_t* hi) {
  int64_t diag = i + sk - sq;
  int64_t l = p.window_left >= 0 ? diag - p.window_left : 0;
  int64_t h = p.window_right >= 0 ? diag + p.window_right + 1 : sk;
  *lo = l < 0 ? 0 : l;
  *hi = h > sk ? sk : h;
  if (*hi < *lo) *hi = *lo;
}

// CPU reference implementations (src/attention/reference.cpp).
Status forward_cpu(const Problem& p);
Status backward_cpu(const BackwardProblem& p);

// GPU implementations (src/attention/*_sm90.cu); kNotSupported when the build has no CUDA.
Status forward_cuda(const Problem& p, const Context& ctx);
// Scratch bytes forward_cuda can use for p (split-KV's partial buffers; 0 when it would not split).
Status forward_workspace_cuda(const Problem& p, size_t* bytes);

}  // namespace deepwell::attention
