// Split tail of the sm_90 attention forward kernel (SplitTail in fwd_combine.hpp): the last tiles'
// key ranges run as separate units on CTAs that would otherwise idle in the last round, and the
// CTA of split 0 merges the others' results into its own before its epilogue.
//
// Every split's thread i of consumer warpgroup w holds the same (row, column) elements of O, so a
// split publishes its fragment as it is: one slot per (tail tile, split 1.., warpgroup) of
// (head_dim / 2 + 2) x 128 floats, register-major (a warp's store of one register is 128
// contiguous bytes), O normalized over the split's keys, then the thread's two rows' LSE. Split 0
// waits for its warpgroup's counter and merges in split order, so the bits do not depend on
// timing:
//   lse = log(sum_s exp(lse_s)),   O = sum_s exp(lse_s - lse) O_s
// (a split whose rows saw no key has lse_s = -inf and weight 0).
#pragma once

#include "attention/fwd_sm90_epilogue.cuh"
#include "core/flags_sm90.cuh"

namespace deepwell::attention::sm90 {

template <class Traits>
struct Tail {
  using T = Traits;

  template <class Params>
  __device__ static float* slot(Params const& p, int tail, int split, int thread_idx) {
    constexpr int kValues = T::kHeadDim / 2 + 2;  // O (64 rows x head_dim / 128 threads), 2 LSE
    const int wg = thread_idx / 128;
    const int64_t s =
        (int64_t(tail) * (p.tail_splits - 1) + (split - 1)) * T::kNumMmaWarpGroups + wg;
    return p.tail_part + s * (kValues * 128) + thread_idx % 128;
  }
  template <class Params>
  __device__ static int32_t* flag(Params const& p, int tail, int thread_idx) {
    return p.tail_flags + tail * T::kNumMmaWarpGroups + thread_idx / 128;
  }

  // Split 1..: stores this warpgroup's O and LSE (L2 only) and counts them in.
  template <class Params, class TensorO>
  __device__ static void publish(Params const& p, TileCoord const& tc, int thread_idx,
                                 TensorO const& tOrO, float const (&lse)[2]) {
    constexpr int kN = decltype(size(tOrO))::value;
    static_assert(kN == T::kHeadDim / 2, "64 rows x head_dim per 128 threads");
    float* dst = slot(p, tc.tail, tc.split, thread_idx);
    CUTE_UNROLL
    for (int i = 0; i < kN; ++i) __stcg(dst + i * 128, tOrO.data()[i]);
    __stcg(dst + kN * 128, lse[0]);
    __stcg(dst + (kN + 1) * 128, lse[1]);
    count_in(p, tc, thread_idx);
  }

  // After a warpgroup's stores of its slot: counted in by its thread 0 with a release. The
  // warpgroup's stores precede that release through the epilogue's barrier (its uses by this
  // warpgroup are in program order).
  template <class Params>
  __device__ static void count_in(Params const& p, TileCoord const& tc, int thread_idx) {
    named_barrier_sync(Epilogue<T>::kFirstBarrier + thread_idx / 128, 128);
    if (thread_idx % 128 == 0) detail::red_release_add(flag(p, tc.tail, thread_idx), 1);
  }

  // Split 0: waits for the other splits of its warpgroup's rows, then merges them into tOrO / lse.
  template <class Params, class TensorO>
  __device__ static void merge(Params const& p, TileCoord const& tc, int thread_idx, TensorO& tOrO,
                               float (&lse)[2]) {
    constexpr int kN = decltype(size(tOrO))::value;
    detail::wait_flag_geq(flag(p, tc.tail, thread_idx), p.tail_splits - 1);  // every thread
    // Rows of the fragment (rowcol view, fwd_sm90_softmax.cuh): (2 rows, kN / 2 columns).
    Tensor o = make_tensor(tOrO.data(), rowcol(tOrO.layout()));
    static_assert(decltype(size<0>(o))::value == 2);
    float mx[2] = {lse[0], lse[1]};
    for (int s = 1; s < p.tail_splits; ++s) {
      const float* src = slot(p, tc.tail, s, thread_idx);
      mx[0] = fmaxf(mx[0], __ldcg(src + kN * 128));
      mx[1] = fmaxf(mx[1], __ldcg(src + (kN + 1) * 128));
    }
    // Weights relative to the largest LSE; a row no split saw keeps O = 0, lse = -inf.
    auto weight = [&](float l, int r) { return mx[r] == -INFINITY ? 0.f : __expf(l - mx[r]); };
    float sum[2] = {weight(lse[0], 0), weight(lse[1], 1)};
    for (int s = 1; s < p.tail_splits; ++s) {
      const float* src = slot(p, tc.tail, s, thread_idx);
      sum[0] += weight(__ldcg(src + kN * 128), 0);
      sum[1] += weight(__ldcg(src + (kN + 1) * 128), 1);
    }
    float inv[2];
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      inv[r] = sum[r] > 0.f ? 1.f / sum[r] : 0.f;
      const float w0 = weight(lse[r], r) * inv[r];
      CUTE_UNROLL
      for (int c = 0; c < size<1>(o); ++c) o(r, c) *= w0;
    }
    for (int s = 1; s < p.tail_splits; ++s) {
      const float* src = slot(p, tc.tail, s, thread_idx);
      const float w[2] = {weight(__ldcg(src + kN * 128), 0) * inv[0],
                          weight(__ldcg(src + (kN + 1) * 128), 1) * inv[1]};
      // Register i of the fragment (published as i) is element (r, c) of the rowcol view with
      // o.layout()(r, c) == i.
      CUTE_UNROLL
      for (int r = 0; r < 2; ++r) {
        CUTE_UNROLL
        for (int c = 0; c < size<1>(o); ++c) o(r, c) += w[r] * __ldcg(src + o.layout()(r, c) * 128);
      }
    }
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) lse[r] = sum[r] > 0.f ? mx[r] + __logf(sum[r]) : -INFINITY;
  }

  // A split other than 0 whose key range is empty: O = 0, lse = -inf (weight 0), counted in.
  template <class Params>
  __device__ static void publish_empty(Params const& p, TileCoord const& tc, int thread_idx) {
    constexpr int kN = T::kHeadDim / 2;
    float* dst = slot(p, tc.tail, tc.split, thread_idx);
    for (int i = 0; i < kN; ++i) __stcg(dst + i * 128, 0.f);
    __stcg(dst + kN * 128, -INFINITY);
    __stcg(dst + (kN + 1) * 128, -INFINITY);
    count_in(p, tc, thread_idx);
  }
};

}  // namespace deepwell::attention::sm90
