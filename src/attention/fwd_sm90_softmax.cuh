// Online softmax and masking on wgmma accumulator fragments.
//
// A thread of a consumer warpgroup holds, of each 64 x N accumulator, 2 rows (r and r + 8) and of
// each 8 columns 2 neighbours; the 4 threads of a quad share a row. `rowcol` re-views a fragment
// as (rows, cols) of this thread, so row reductions are plain loops plus two quad shuffles.
//
// Softmax runs in base 2 on raw scores s: p = 2^(s * scale_log2 - m * scale_log2) with m the
// running row max, one FFMA and one EX2 per element. With kConditional (d = 256 and the
// unmasked d = 64 tile: kConditionalRescale in fwd_sm90_config.hpp) the m a row subtracts is only
// moved up when the row's true max exceeds it by more than kRescaleLog2 (FlashAttention-4's
// conditional rescaling): until then p <= 2^kRescaleLog2 (bf16 / fp16 P keep their relative
// precision) and the output accumulated so far needs no rescale, so a warp with no row moved
// skips it. Any m gives the same softmax, since numerator and denominator both carry 2^-m. A row
// whose visible scores are all -inf keeps m = -inf and uses 0 in the exponent, so it contributes
// p = 0 and ends with sum 0: its output is 0 and its LSE -inf.
#pragma once

#include <cute/tensor.hpp>

namespace deepwell::attention::sm90 {

using namespace cute;

// ((2, 2, V), MMA_M, MMA_N) -> ((2, MMA_M), (2, V, MMA_N)): rows, then columns.
template <class Layout>
__device__ __forceinline__ constexpr auto rowcol(Layout const& acc) {
  static_assert(decltype(rank(acc))::value == 3 && decltype(rank<0>(acc))::value == 3);
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)),
                     make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// The accumulator layout of S re-viewed as the register A operand of the P V wgmma (16-bit, K = 16
// per instruction): ((2, 2, V), MMA_M, 1) -> ((2, 2, 2), MMA_M, V / 2).
template <class Layout>
__device__ __forceinline__ constexpr auto acc_as_operand_a(Layout const& acc) {
  auto l = logical_divide(get<0>(acc), Shape<Underscore, Underscore, _2>{});
  return make_layout(make_layout(get<0>(l), get<1>(l), get<2, 0>(l)), get<1>(acc),
                     coalesce(make_layout(get<2, 1>(l), get<2>(acc))));
}

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

constexpr float kRescaleLog2 = 8.0f;

// kConditional: the max moves only past kRescaleLog2 (kConditionalRescale in
// fwd_sm90_config.hpp); otherwise at every new max, as FlashAttention-2/3. kTree: step() runs
// step_tree() (kTreeSoftmax in fwd_sm90_config.hpp).
template <int kRows, bool kConditional, bool kTree>
struct OnlineSoftmax {
  float row_max[kRows];  // the max each row subtracts (kConditional: up to kRescaleLog2 below)
  float row_sum[kRows];  // this thread's partial sum; quad-reduced in finalize()
  float scale_log2;

  __device__ __forceinline__ explicit OnlineSoftmax(float scale_log2_) : scale_log2(scale_log2_) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) row_max[r] = -INFINITY, row_sum[r] = 0.f;
  }

  // What step() returns: kConditional, whether any row of the warp moved; otherwise always.
  static __device__ __forceinline__ bool must_rescale(bool moved) {
    if constexpr (kConditional) {
      return __any_sync(0xffffffffu, moved);
    } else {
      return true;
    }
  }

  // Replaces the scores in `s` (a rowcol view) by p; returns through `o_scale` the factor that
  // rescales the output accumulated so far, and whether the caller must apply it: kConditional,
  // whether any row of the warp moved its max (warp-uniform); otherwise always.
  template <class Tensor>
  __device__ __forceinline__ bool step(Tensor& s, float (&o_scale)[kRows]) {
    if constexpr (kTree) {
      return step_tree(s, o_scale);
    }
    static_assert(decltype(size<0>(s))::value == kRows);
    bool moved = false;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float m = row_max[r];
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) m = fmaxf(m, s(r, c));
      m = quad_max(m);
      if constexpr (kConditional) {
        // -inf to finite moves; -inf to -inf does not (-inf > -inf is false)
        if (m * scale_log2 > row_max[r] * scale_log2 + kRescaleLog2) {
          moved = true;
        } else {
          m = row_max[r];
        }
      }
      const float m_scaled = m == -INFINITY ? 0.f : m * scale_log2;
      o_scale[r] = exp2_approx(row_max[r] * scale_log2 - m_scaled);
      row_max[r] = m;
      float sum = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) {
        const float p = exp2_approx(fmaf(s(r, c), scale_log2, -m_scaled));
        s(r, c) = p;
        sum += p;
      }
      row_sum[r] = row_sum[r] * o_scale[r] + sum;
    }
    return must_rescale(moved);
  }

  // step() with short dependency chains: each row's max and sum over kLanes independent partial
  // results (fmax is exact in any order; the sum's rounding order changes, deterministically), and
  // all rows' phases side by side, so that the few consumer warps per scheduler find independent
  // instructions instead of waiting on a 32-long FMNMX or FADD chain.
  template <class Tensor>
  __device__ __forceinline__ bool step_tree(Tensor& s, float (&o_scale)[kRows]) {
    static_assert(decltype(size<0>(s))::value == kRows);
    constexpr int kCols = decltype(size<1>(s))::value;
    constexpr int kLanes = 4;
    static_assert(kCols % kLanes == 0);
    float m[kRows];
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float part[kLanes];
      CUTE_UNROLL
      for (int j = 0; j < kLanes; ++j) part[j] = s(r, j);
      CUTE_UNROLL
      for (int c = kLanes; c < kCols; c += kLanes) {
        CUTE_UNROLL
        for (int j = 0; j < kLanes; ++j) part[j] = fmaxf(part[j], s(r, c + j));
      }
      m[r] = fmaxf(fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3])), row_max[r]);
    }
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) m[r] = quad_max(m[r]);
    bool moved = false;
    float m_scaled[kRows];
    // The max update of step(), for all rows. Kept written out: a helper shared with step() gave
    // the same instruction count but another schedule here (ptxas fused other FADDs into FFMAs),
    // so not the kernel that was measured (session 23).
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      if constexpr (kConditional) {
        if (m[r] * scale_log2 > row_max[r] * scale_log2 + kRescaleLog2) {
          moved = true;
        } else {
          m[r] = row_max[r];
        }
      }
      m_scaled[r] = m[r] == -INFINITY ? 0.f : m[r] * scale_log2;
      o_scale[r] = exp2_approx(row_max[r] * scale_log2 - m_scaled[r]);
      row_max[r] = m[r];
    }
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float part[kLanes];
      CUTE_UNROLL
      for (int j = 0; j < kLanes; ++j) part[j] = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < kCols; c += kLanes) {
        CUTE_UNROLL
        for (int j = 0; j < kLanes; ++j) {
          const float p = exp2_approx(fmaf(s(r, c + j), scale_log2, -m_scaled[r]));
          s(r, c + j) = p;
          part[j] += p;
        }
      }
      row_sum[r] = row_sum[r] * o_scale[r] + ((part[0] + part[1]) + (part[2] + part[3]));
    }
    return must_rescale(moved);
  }

  // Final normalization factor of each row (0 for rows that saw nothing) and its natural-log LSE.
  __device__ __forceinline__ void finalize(float softmax_scale, float (&o_scale)[kRows],
                                           float (&lse)[kRows]) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float sum = quad_sum(row_sum[r]);
      const bool empty = !(sum > 0.f);  // 0 or NaN
      o_scale[r] = empty ? 0.f : 1.f / sum;
      lse[r] = empty ? -INFINITY : row_max[r] * softmax_scale + __logf(sum);
    }
  }
};

// Masks S (rowcol view, with coordinates `coord` of the same view, relative to the tile origin)
// for key block n of the tile whose first query row is m0: keys at or past seqlen_k, and keys
// outside the bottom-right aligned window.
// kOneBound (kOneBoundMask in fwd_sm90_config.hpp): without a left window (causal, or no window
// at all) an element is tested against the upper bound only: one compare and one select instead
// of two compares and a select.
template <int kBlockM, int kBlockN, bool kOneBound, class TensorS, class TensorC>
__device__ __forceinline__ void apply_mask(TensorS& s, TensorC const& coord, int m0, int n_block,
                                           int seqlen_q, int seqlen_k, int window_left,
                                           int window_right) {
  const int shift = seqlen_k - seqlen_q;
  auto upper = [&](int row) {
    return window_right >= 0 ? min(seqlen_k, row + shift + window_right + 1) : seqlen_k;
  };
  if (kOneBound && window_left < 0) {
    CUTE_UNROLL
    for (int r = 0; r < size<0>(s); ++r) {
      const int hi = upper(m0 + get<0>(coord(r, 0))) - n_block * kBlockN;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) {
        if (get<1>(coord(r, c)) >= hi) s(r, c) = -INFINITY;
      }
    }
    return;
  }
  CUTE_UNROLL
  for (int r = 0; r < size<0>(s); ++r) {
    const int row = m0 + get<0>(coord(r, 0));
    const int hi = upper(row);
    const int lo = window_left >= 0 ? row + shift - window_left : 0;
    CUTE_UNROLL
    for (int c = 0; c < size<1>(s); ++c) {
      const int col = n_block * kBlockN + get<1>(coord(r, c));
      if (col >= hi || col < lo) s(r, c) = -INFINITY;
    }
  }
}

// Does key block n need apply_mask for the tile whose first query row is m0?
template <int kBlockM, int kBlockN>
__device__ __forceinline__ bool block_needs_mask(int m0, int n_block, int seqlen_q,
                                                 int seqlen_k, int window_left, int window_right) {
  const int shift = seqlen_k - seqlen_q;
  const int n0 = n_block * kBlockN, n_last = n0 + kBlockN - 1;
  if (n_last >= seqlen_k) return true;
  if (window_right >= 0 && n_last > m0 + shift + window_right) return true;
  if (window_left >= 0 && n0 < m0 + kBlockM - 1 + shift - window_left) return true;
  return false;
}

}  // namespace deepwell::attention::sm90
