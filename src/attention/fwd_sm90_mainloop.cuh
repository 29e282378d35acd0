// The mainloop of the sm_90 attention forward kernel.
//
// Producer (one thread): TMA loads of Q for each tile (one tile ahead when Q is double-buffered)
// and of K and V, key block by key block, into kStages-deep rings guarded by two PipelineTmaAsync
// pipelines. Loads run in the order the
// consumers need them: K[n], then K[n-1] with V[n], ... (key blocks go from the last to the first,
// so the blocks that need masking come first).
//
// Consumers (one warpgroup per 64 query rows), per key block n, overlapping the softmax of block n
// with the P V product of block n+1 (FlashAttention-3's intra-warpgroup overlap):
//   wait K[n];  issue S = Q K[n]^T;  wait V[n+1];  issue O += P V[n+1];  wait S;
//   mask, softmax -> P', rescale factors;  wait PV;  O *= rescale;  P = P'
// (where kConditionalRescale: only when a row of the warp moved its max, fwd_sm90_softmax.cuh;
// where kRescaleBeforePV: the O *= rescale moves to between the next S and P V issues, so it
// runs while Q K^T does; where !kLateVWait: V[n+1] is awaited before S is issued. ptxas moves
// "wait PV" above the softmax unless kPinPvWait pins it there: pin_after_softmax below.
// fwd_sm90_config.hpp says which tiles.)
// and across warpgroups (pingpong, where use_pingpong() in fwd_sm90_config.hpp says so): the
// warpgroups take turns issuing their wgmma batches, so the tensor cores run one warpgroup's GEMMs
// while the others do their softmax.
#pragma once

#include <limits>

#include "attention/fwd_sm90_epilogue.cuh"
#include "attention/fwd_sm90_scheduler.cuh"
#include "attention/fwd_sm90_softmax.cuh"

namespace deepwell::attention::sm90 {

// One warpgroup-wide wgmma batch: C (+)= A B over the K mode, then optionally wait until at most
// `kWait` batches are in flight (-1: don't wait).
template <int kWait, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma(TiledMma& mma, TA const& a, TB const& b, TC& c,
                                      bool zero_init) {
  constexpr bool kRegA =
      !cute::is_base_of<GMMA::DescriptorIterator, typename TiledMma::FrgTypeA>::value;
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  mma.accumulate_ = zero_init ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
  CUTE_UNROLL
  for (int k = 0; k < size<2>(a); ++k) {
    cute::gemm(mma, a(_, _, k), b(_, _, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  if constexpr (kWait >= 0) warpgroup_wait<kWait>();
  warpgroup_fence_operand(c);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
}

__device__ __forceinline__ void named_barrier_sync_ids(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Turn-taking between consumer warpgroups: warpgroup w waits on barrier kFirst + w until the
// previous warpgroup has issued its batch, then, once its own batch is issued, lets the next one go.
template <int kWarpGroups>
struct WarpGroupTurns {
  static constexpr int kFirst = 4;  // named barriers 4.. (1..3 are the epilogue's)
  static __device__ __forceinline__ void init(int wg) {
    // The last warpgroup hands the first turn to warpgroup 0.
    if (kWarpGroups > 1 && wg == kWarpGroups - 1) named_barrier_arrive(kFirst, 256);
  }
  static __device__ __forceinline__ void wait_turn(int wg) {
    if (kWarpGroups > 1) named_barrier_sync_ids(kFirst + wg, 256);
  }
  static __device__ __forceinline__ void pass_turn(int wg) {
    if (kWarpGroups > 1) named_barrier_arrive(kFirst + (wg + 1) % kWarpGroups, 256);
  }
};

// ptxas hoists a key step's P V wait (`wgmma.wait_group 0`, nothing after it in program order
// depends on it until the P conversion) to the top of its basic block, ahead of the softmax of the
// next scores, so that a warpgroup's softmax would not overlap its own P V (perf-notes attention
// item 49). It keeps shared-memory stores and wgmma waits in program order, though (the wait is
// what makes a store over a wgmma's shared operands safe), so a store that depends on every row's
// sum pins the wait after the exponentials. The store never executes: a sum of exponentials is
// >= 0 or NaN, and NaN < 0 is false.
template <int kRows>
__device__ __forceinline__ void pin_after_softmax(const float (&row_sum)[kRows], uint32_t smem_word) {
  float lowest = row_sum[0];
  CUTE_UNROLL
  for (int r = 1; r < kRows; ++r) lowest = fminf(lowest, row_sum[r]);
  if (lowest < 0.f) asm volatile("st.shared.u32 [%0], %1;" ::"r"(smem_word), "r"(0u) : "memory");
}

template <class Traits>
struct Mainloop {
  using Turns = WarpGroupTurns<Traits::kNumMmaWarpGroups>;
  using T = Traits;
  using Element = typename T::Element;
  using Pipeline = typename T::PipelineKV;
  using PipelineState = typename Pipeline::PipelineState;
  static constexpr int kBlockM = T::kBlockM, kBlockN = T::kBlockN, kHeadDim = T::kHeadDim;
  // The d = 64 instances, whose every launch takes turns, test nothing at run time (same code as
  // before the launch parameter existed: they keep their register allocation). d = 256 takes turns
  // at every length too (use_pingpong) but keeps the run-time test: that is the code measured, and
  // without it the d = 256 kernels spill 4-8 bytes more.
  static constexpr bool kAlwaysPingpong = kHeadDim < 128;
  static_assert(!kAlwaysPingpong || use_pingpong(kHeadDim, std::numeric_limits<long long>::max()));
  template <class Params>
  __device__ static bool takes_turns(Params const& p) {
    return kAlwaysPingpong || p.pingpong;
  }

  // ------------------------------------------------------------------------------ producer
  // Run by a single thread (see the kernel): it waits on the barriers and issues every TMA.

  // Q of tile `w` into Q stage q_loads % kQStages.
  template <class Params>
  __device__ static void load_q(Params const& p, typename T::SharedStorage& ss, TileWork const& w,
                                int& q_loads) {
    const int q_stage = q_loads % T::kQStages;
    Tensor sQ = make_tensor(make_smem_ptr(ss.q.data() + q_stage * cosize_v<typename T::SmemLayoutQ>),
                            typename T::SmemLayoutQ{});
    const int batch = p.cu_seqlens_q ? 0 : w.tc.batch;
    Tensor mQ = p.tma_q.get_tma_tensor(p.shape_q)(_, _, w.tc.head, batch);
    const int row0 = w.seq.q_offset + tile_row0<kBlockM>(w.seq, w.tc.m_block);
    Tensor gQ = local_tile(domain_offset(make_coord(row0, _0{}), mQ),
                           Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(_, _0{}));
    auto q_part = tma_partition(p.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                group_modes<0, 2>(gQ));
    // The stage is free once every consumer is done with the tile that used it kQStages tiles ago
    // (after its last Q K^T, or after its epilogue when O is staged in Q's buffer).
    if (q_loads >= T::kQStages) {
      cutlass::arch::ClusterBarrier::wait(&ss.q_empty[q_stage], (q_loads / T::kQStages - 1) & 1);
    }
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.q_full[q_stage], T::kQBytes);
    copy(p.tma_q.with(ss.q_full[q_stage], 0), get<0>(q_part)(_, 0), get<1>(q_part));
    ++q_loads;
  }

  // K and V of tile `w`; `after_first_k()` runs once the first K block is issued (the Q load goes
  // there: the first Q K^T needs both, and K must not wait behind Q).
  template <class Params, class AfterFirstK>
  __device__ static void load_kv(Params const& p, typename T::SharedStorage& ss, Pipeline& pipe_k,
                                 Pipeline& pipe_v, PipelineState& k_state, PipelineState& v_state,
                                 TileWork const& w, AfterFirstK&& after_first_k) {
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename T::SmemLayoutK{});
    Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename T::SmemLayoutV{});
    const int batch = p.cu_seqlens_q ? 0 : w.tc.batch;
    const int head_kv = w.tc.head / p.heads_kv_group;
    Tensor mK = p.tma_k.get_tma_tensor(p.shape_k)(_, _, head_kv, batch);
    Tensor mV = p.tma_v.get_tma_tensor(p.shape_k)(_, _, head_kv, batch);
    Tensor gK = local_tile(domain_offset(make_coord(w.seq.k_offset, _0{}), mK),
                           Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));
    Tensor gV = local_tile(domain_offset(make_coord(w.seq.k_offset, _0{}), mV),
                           Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));
    auto k_part = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK),
                                group_modes<0, 2>(gK));
    auto v_part = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV),
                                group_modes<0, 2>(gV));
    Tensor tKg = get<0>(k_part);  // (TMA, n_blocks)
    Tensor tKs = get<1>(k_part);  // (TMA, stages)
    Tensor tVg = get<0>(v_part);
    Tensor tVs = get<1>(v_part);

    auto load_k = [&](int n) {
      pipe_k.producer_acquire(k_state);
      copy(p.tma_k.with(*pipe_k.producer_get_barrier(k_state), 0), tKg(_, n),
           tKs(_, k_state.index()));
      ++k_state;
    };
    auto load_v = [&](int n) {
      pipe_v.producer_acquire(v_state);
      copy(p.tma_v.with(*pipe_v.producer_get_barrier(v_state), 0), tVg(_, n),
           tVs(_, v_state.index()));
      ++v_state;
    };

    int n = w.n_hi - 1;
    load_k(n);
    after_first_k();
    for (; n > w.n_lo; --n) {
      load_k(n - 1);
      load_v(n);
    }
    load_v(w.n_lo);
  }

  // ------------------------------------------------------------------------------ consumer
  // Computes the tile's normalized O (in `tOrO`, fp32) and the LSE of this thread's rows.
  template <class Params, class TensorO>
  __device__ static void compute(Params const& p, typename T::SharedStorage& ss, Pipeline& pipe_k,
                                 Pipeline& pipe_v, PipelineState& k_state, PipelineState& v_state,
                                 TileCoord const& tc, SeqInfo const& seq, int n_lo, int n_hi,
                                 int q_tiles, int thread_idx, TensorO& tOrO, float (&lse)[2]) {
    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaPV mma_pv;
    auto thr_qk = mma_qk.get_thread_slice(thread_idx);

    const int q_stage = q_tiles % T::kQStages;
    Tensor sQ = make_tensor(make_smem_ptr(ss.q.data() + q_stage * cosize_v<typename T::SmemLayoutQ>),
                            typename T::SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename T::SmemLayoutK{});
    Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename T::SmemLayoutVt{});
    // The wgmma descriptors depend only on the thread's warpgroup: partitioned for its first
    // thread, with the index broadcast from lane 0 so the compiler knows it is warp-uniform and
    // builds the descriptors in uniform registers (as FA3 does; no R2UR per wgmma).
    const int wg_thread0 = __shfl_sync(0xffffffff, thread_idx / 128, 0) * 128;
    auto wg_qk = mma_qk.get_thread_slice(wg_thread0);
    auto wg_pv = mma_pv.get_thread_slice(wg_thread0);
    Tensor tSrQ = wg_qk.partition_fragment_A(sQ);  // wgmma descriptors
    Tensor tSrK = wg_qk.partition_fragment_B(sK);
    Tensor tOrV = wg_pv.partition_fragment_B(sVt);

    // (row, col) of every S element this thread holds, relative to the tile.
    Tensor cS = thr_qk.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
    Tensor coord = make_tensor(cS.data(), rowcol(cS.layout()));

    OnlineSoftmax<2, T::kConditionalRescale, T::kTreeSoftmax> softmax(p.scale_log2);
    const int m0 = tile_row0<kBlockM>(seq, tc.m_block);
    float o_scale[2];
    auto masked_softmax = [&](auto& tSrS, int n) -> bool {
      Tensor s = make_tensor(tSrS.data(), rowcol(tSrS.layout()));
      // (DenseOnly: no block needs one.)
      if (!T::kDenseOnly &&
          block_needs_mask<kBlockM, kBlockN>(m0, n, seq.seqlen_q, seq.seqlen_k, p.window_left,
                                             p.window_right)) {
        apply_mask<kBlockM, kBlockN, T::kOneBoundMask>(s, coord, m0, n, seq.seqlen_q,
                                                       seq.seqlen_k, p.window_left, p.window_right);
      }
      return softmax.step(s, o_scale);
    };
    auto to_operand_a = [&](auto& tSrS) {
      Tensor tOrP = make_tensor<Element>(acc_as_operand_a(tSrS.layout()));
      constexpr int kN = decltype(size(tSrS))::value;
      auto converted = cutlass::NumericArrayConverter<Element, float, kN>{}(
          *reinterpret_cast<cutlass::Array<float, kN> const*>(tSrS.data()));
      *reinterpret_cast<cutlass::Array<Element, kN>*>(tOrP.data()) = converted;
      return tOrP;
    };

    cutlass::arch::ClusterTransactionBarrier::wait(&ss.q_full[q_stage], (q_tiles / T::kQStages) & 1);

    const int wg = thread_idx / 128;
    const bool pingpong = takes_turns(p);
    int n = n_hi - 1;
    Tensor tSrS = partition_fragment_C(mma_qk, select<0, 1>(typename T::TileShapeQK{}));
    pipe_k.consumer_wait(k_state);
    if (pingpong) Turns::wait_turn(wg);
    wgmma<-1>(mma_qk, tSrQ, tSrK(_, _, _, k_state.index()), tSrS, true);
    if (pingpong) Turns::pass_turn(wg);
    warpgroup_wait<0>();
    pipe_k.consumer_release(k_state);
    ++k_state;
    masked_softmax(tSrS, n);
    Tensor tOrP = to_operand_a(tSrS);

    auto rescale_o = [&]() {
      Tensor o = make_tensor(tOrO.data(), rowcol(tOrO.layout()));
      CUTE_UNROLL
      for (int r = 0; r < size<0>(o); ++r) {
        CUTE_UNROLL
        for (int c = 0; c < size<1>(o); ++c) o(r, c) *= o_scale[r];
      }
    };
    bool rescale_pending = false;  // kRescaleBeforePV: O *= o_scale is due before the next P V
    bool first_pv = true;
    // One key block: the next S issued, then P V of the previous one, the softmax of the next S
    // while P V runs, O rescaled, the next P. A lambda called from the loop rather than the loop's
    // body: ptxas allocates it better (the d = 64 192x128 tile lost its 132 / 168-byte spill, and
    // measured +1-2 %; perf-notes item 60).
    auto key_step = [&](int n) {
      Tensor tSrS_next = partition_fragment_C(mma_qk, select<0, 1>(typename T::TileShapeQK{}));
      pipe_k.consumer_wait(k_state);
      if constexpr (!T::kLateVWait) pipe_v.consumer_wait(v_state);
      if (pingpong) Turns::wait_turn(wg);
      wgmma<-1>(mma_qk, tSrQ, tSrK(_, _, _, k_state.index()), tSrS_next, true);
      if constexpr (T::kRescaleBeforePV) {
        if (rescale_pending) rescale_o();  // while Q K^T runs
      }
      if constexpr (T::kLateVWait) pipe_v.consumer_wait(v_state);
      wgmma<-1>(mma_pv, tOrP, tOrV(_, _, _, v_state.index()), tOrO, first_pv);
      if (pingpong) Turns::pass_turn(wg);
      first_pv = false;
      warpgroup_wait<1>();  // S ready; P V still running
      pipe_k.consumer_release(k_state);
      ++k_state;
      const bool rescale = masked_softmax(tSrS_next, n);
      if constexpr (T::kPinPvWait) {
        pin_after_softmax(softmax.row_sum, cute::cast_smem_ptr_to_uint(&ss.pin));
      }
      warpgroup_wait<0>();  // P V done: O may be rescaled, V's stage released
      pipe_v.consumer_release(v_state);
      ++v_state;
      if constexpr (T::kRescaleBeforePV) {
        rescale_pending = rescale;
      } else if (rescale) {
        rescale_o();
      }
      tOrP = to_operand_a(tSrS_next);
    };
    for (--n; n >= n_lo; --n) key_step(n);
    pipe_v.consumer_wait(v_state);
    if (pingpong) Turns::wait_turn(wg);
    if constexpr (T::kRescaleBeforePV) {
      if (rescale_pending) rescale_o();
    }
    wgmma<-1>(mma_pv, tOrP, tOrV(_, _, _, v_state.index()), tOrO, first_pv);
    if (pingpong) Turns::pass_turn(wg);
    warpgroup_wait<0>();
    pipe_v.consumer_release(v_state);
    ++v_state;

    softmax.finalize(p.softmax_scale, o_scale, lse);
    rescale_o();  // by 1 / row sum
  }

  // ------------------------------------------------------------------- consumer, tiles back to back
  // Every tile of this CTA (DenseOnly twins with kCrossTile, fwd_sm90_config.hpp): compute() and
  // the epilogue per tile, except at the boundary between two tiles, where
  //   wait K'[first];  issue S' = Q' K'[first]^T;  wait V[last];  issue O += P V[last];  wait S';
  //   finalize this tile's softmax;  softmax of S' (fresh state);  wait PV;  O /= row sum;
  //   store O (epilogue);  P = P'
  // so the next tile's first Q K^T and softmax run under this tile's last P V, and a warpgroup
  // keeps its place against the other one across tiles (compute() starts both from an empty pipe
  // at every tile, in step). Turn-taking warpgroups take one turn for the boundary's two issues,
  // as for a key step's. Q is released after a tile's last Q K^T, not after its epilogue.
  template <class Params>
  __device__ static void compute_tiles_cross(Params const& p, typename T::SharedStorage& ss,
                                             Pipeline& pipe_k, Pipeline& pipe_v,
                                             PipelineState& k_state, PipelineState& v_state,
                                             int thread_idx) {
    static_assert(T::kDenseOnly && !T::kRescaleBeforePV && T::kLateVWait,
                  "cross-tile consumers: dense calls, the rescale after the P V wait");
    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaPV mma_pv;
    const int wg_thread0 = __shfl_sync(0xffffffff, thread_idx / 128, 0) * 128;
    auto wg_qk = mma_qk.get_thread_slice(wg_thread0);
    auto wg_pv = mma_pv.get_thread_slice(wg_thread0);
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename T::SmemLayoutK{});
    Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), typename T::SmemLayoutVt{});
    Tensor tSrK = wg_qk.partition_fragment_B(sK);
    Tensor tOrV = wg_pv.partition_fragment_B(sVt);
    auto q_operand = [&](int q_tiles) {
      const int q_stage = q_tiles % T::kQStages;
      Tensor sQ = make_tensor(
          make_smem_ptr(ss.q.data() + q_stage * cosize_v<typename T::SmemLayoutQ>),
          typename T::SmemLayoutQ{});
      return wg_qk.partition_fragment_A(sQ);
    };
    auto wait_q = [&](int q_tiles) {
      cutlass::arch::ClusterTransactionBarrier::wait(&ss.q_full[q_tiles % T::kQStages],
                                                     (q_tiles / T::kQStages) & 1);
    };
    auto to_operand_a = [&](auto& tSrS) {
      Tensor tOrP = make_tensor<Element>(acc_as_operand_a(tSrS.layout()));
      constexpr int kN = decltype(size(tSrS))::value;
      auto converted = cutlass::NumericArrayConverter<Element, float, kN>{}(
          *reinterpret_cast<cutlass::Array<float, kN> const*>(tSrS.data()));
      *reinterpret_cast<cutlass::Array<Element, kN>*>(tOrP.data()) = converted;
      return tOrP;
    };
    using Softmax = OnlineSoftmax<2, T::kConditionalRescale, T::kTreeSoftmax>;

    // The tile of `round` or, past any without work (as next_work: none in a dense call), the
    // next one.
    TileCoord tc;
    SeqInfo seq;
    int n_lo = 0, n_hi = 0;
    auto find_tile = [&](int& round, TileCoord& c, SeqInfo& sq, int& lo, int& hi) {
      for (int t = tile_of_round(round); t < p.num_tiles; t = tile_of_round(++round)) {
        c = tile_coord(p, t);
        sq = seq_info<kBlockM, kBlockN>(p, c.batch);
        if (tile_row0<kBlockM>(sq, c.m_block) >= sq.seqlen_q) continue;  // as next_work
        key_block_range<kBlockM, kBlockN>(p, sq, c, &lo, &hi);
        if (hi > lo) return true;
      }
      return false;
    };
    int round = 0;
    if (!find_tile(round, tc, seq, n_lo, n_hi)) return;
    int q_tiles = 0;
    const int wg = thread_idx / 128;
    const bool pingpong = takes_turns(p);

    Tensor tOrO = partition_fragment_C(mma_pv, select<0, 1>(typename T::TileShapePV{}));
    Softmax softmax(p.scale_log2);
    float o_scale[2];
    auto rescale_o = [&](float const (&scale)[2]) {
      Tensor o = make_tensor(tOrO.data(), rowcol(tOrO.layout()));
      CUTE_UNROLL
      for (int r = 0; r < size<0>(o); ++r) {
        CUTE_UNROLL
        for (int c = 0; c < size<1>(o); ++c) o(r, c) *= scale[r];
      }
    };
    auto softmax_step = [&](auto& tSrS) {  // no block of a dense call needs a mask
      Tensor s = make_tensor(tSrS.data(), rowcol(tSrS.layout()));
      return softmax.step(s, o_scale);
    };

    // The first tile's first key block, alone.
    auto tSrQ = q_operand(q_tiles);
    Tensor tSrS = partition_fragment_C(mma_qk, select<0, 1>(typename T::TileShapeQK{}));
    wait_q(q_tiles);
    pipe_k.consumer_wait(k_state);
    if (pingpong) Turns::wait_turn(wg);
    wgmma<-1>(mma_qk, tSrQ, tSrK(_, _, _, k_state.index()), tSrS, true);
    if (pingpong) Turns::pass_turn(wg);
    warpgroup_wait<0>();
    pipe_k.consumer_release(k_state);
    ++k_state;
    softmax_step(tSrS);
    Tensor tOrP = to_operand_a(tSrS);
    bool first_pv = true;

    // One key block of the current tile, as compute()'s key_step.
    auto key_step = [&]() {
      Tensor tSrS_next = partition_fragment_C(mma_qk, select<0, 1>(typename T::TileShapeQK{}));
      pipe_k.consumer_wait(k_state);
      if (pingpong) Turns::wait_turn(wg);
      wgmma<-1>(mma_qk, tSrQ, tSrK(_, _, _, k_state.index()), tSrS_next, true);
      pipe_v.consumer_wait(v_state);
      wgmma<-1>(mma_pv, tOrP, tOrV(_, _, _, v_state.index()), tOrO, first_pv);
      if (pingpong) Turns::pass_turn(wg);
      first_pv = false;
      warpgroup_wait<1>();  // S ready; P V still running
      pipe_k.consumer_release(k_state);
      ++k_state;
      const bool rescale = softmax_step(tSrS_next);
      if constexpr (T::kPinPvWait) {
        pin_after_softmax(softmax.row_sum, cute::cast_smem_ptr_to_uint(&ss.pin));
      }
      warpgroup_wait<0>();  // P V done: O may be rescaled, V's stage released
      pipe_v.consumer_release(v_state);
      ++v_state;
      if (rescale) rescale_o(o_scale);
      tOrP = to_operand_a(tSrS_next);
    };

    while (true) {
      for (int n = n_hi - 2; n >= n_lo; --n) key_step();
      // This tile's last Q K^T is done: its Q stage may load the tile after next.
      cutlass::arch::ClusterBarrier::arrive(&ss.q_empty[q_tiles % T::kQStages]);
      ++q_tiles;
      // The row sums are final (the last block's P is in them; its P V does not change them).
      float inv_sum[2], lse[2];
      softmax.finalize(p.softmax_scale, inv_sum, lse);
      TileCoord tc_next;
      SeqInfo seq_next;
      ++round;
      if (!find_tile(round, tc_next, seq_next, n_lo, n_hi)) {
        pipe_v.consumer_wait(v_state);
        if (pingpong) Turns::wait_turn(wg);
        wgmma<-1>(mma_pv, tOrP, tOrV(_, _, _, v_state.index()), tOrO, first_pv);
        if (pingpong) Turns::pass_turn(wg);
        warpgroup_wait<0>();
        pipe_v.consumer_release(v_state);
        ++v_state;
        rescale_o(inv_sum);
        Epilogue<T>::store(p, ss, output_coord(p, tc), seq, thread_idx, tOrO, lse);
        break;
      }
      // The next tile's first Q K^T with this tile's last P V: key_step's issues and waits,
      // written out again (the two sequences as one shared lambda give d = 64's twin another
      // register allocation and schedule than the one measured).
      tSrQ = q_operand(q_tiles);
      Tensor tSrS_next = partition_fragment_C(mma_qk, select<0, 1>(typename T::TileShapeQK{}));
      wait_q(q_tiles);
      pipe_k.consumer_wait(k_state);
      if (pingpong) Turns::wait_turn(wg);
      wgmma<-1>(mma_qk, tSrQ, tSrK(_, _, _, k_state.index()), tSrS_next, true);
      pipe_v.consumer_wait(v_state);
      wgmma<-1>(mma_pv, tOrP, tOrV(_, _, _, v_state.index()), tOrO, first_pv);
      if (pingpong) Turns::pass_turn(wg);
      warpgroup_wait<1>();  // S' ready; this tile's last P V still running
      pipe_k.consumer_release(k_state);
      ++k_state;
      softmax = Softmax(p.scale_log2);
      softmax_step(tSrS_next);  // a tile's first block rescales nothing
      if constexpr (T::kPinPvWait) {
        pin_after_softmax(softmax.row_sum, cute::cast_smem_ptr_to_uint(&ss.pin));
      }
      warpgroup_wait<0>();
      pipe_v.consumer_release(v_state);
      ++v_state;
      rescale_o(inv_sum);
      Epilogue<T>::store(p, ss, output_coord(p, tc), seq, thread_idx, tOrO, lse);
      tOrP = to_operand_a(tSrS_next);
      first_pv = true;
      tc = tc_next;
      seq = seq_next;
    }
    // Shared memory must outlive the last TMA store's reads.
    if (thread_idx % 128 == 0) Epilogue<T>::wait_store_read();
  }
};

}  // namespace deepwell::attention::sm90
