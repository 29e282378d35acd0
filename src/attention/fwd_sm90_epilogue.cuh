// Epilogue of the sm_90 attention forward kernel: each consumer warpgroup writes its 64 rows of O
// through shared memory (stmatrix), then by one TMA store issued by one of its threads (fixed-length
// batches) or by 16-byte coalesced stores (varlen), and their LSE.
//
// O is staged in its own buffer (at half width, in two passes, where only that fits). Stores are
// guarded by the sequence length and the true head dim, so padded rows and columns are never
// written.
#pragma once

#include "attention/fwd_sm90_scheduler.cuh"
#include "attention/fwd_sm90_softmax.cuh"

namespace deepwell::attention::sm90 {

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The tile coordinate the epilogue takes is the output's (output_coord): its batch is the batch of
// O's tensor, which with split-KV holds num_splits copies of the batches (varlen: the split). A
// split tail's merged tile (split 0; the other splits publish, fwd_sm90_tail.cuh) is stored as
// an unsplit one.
template <class Params>
__device__ __forceinline__ TileCoord output_coord(Params const& p, TileCoord tc) {
  if (tc.tail >= 0) return tc;
  tc.batch = p.cu_seqlens_q ? tc.split : tc.batch + tc.split * p.batch;
  return tc;
}

template <class Traits>
struct Epilogue {
  using T = Traits;
  using Element = typename T::Element;
  static constexpr int kBlockM = T::kBlockM, kHeadDim = T::kHeadDim;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kFirstBarrier = 1;       // named barriers 1.. (0 is __syncthreads)

  template <class Params>
  __device__ static Element* out_row(Params const& p, TileCoord const& tc, SeqInfo const& seq,
                                     int row) {
    const int64_t batch_off =
        int64_t(tc.batch) * (p.cu_seqlens_q ? p.o_split_stride : p.o_batch_stride);
    return static_cast<Element*>(p.out) + batch_off +
           int64_t(seq.q_offset + tile_row0<kBlockM>(seq, tc.m_block) + row) * p.o_row_stride +
           int64_t(tc.head) * p.o_head_stride;
  }

  template <class Params>
  __device__ static float* lse_at(Params const& p, TileCoord const& tc, SeqInfo const& seq,
                                  int row) {
    const int64_t batch_off =
        int64_t(tc.batch) * (p.cu_seqlens_q ? p.lse_split_stride : p.lse_batch_stride);
    return p.lse + batch_off + int64_t(tc.head) * p.lse_head_stride +
           int64_t(seq.q_offset + tile_row0<kBlockM>(seq, tc.m_block) + row) * p.lse_row_stride;
  }

  // Called by one thread per warpgroup before the warpgroup writes its rows of the O buffer again
  // (and before the CTA exits): the previous TMA store has read them.
  __device__ static void wait_store_read() { tma_store_wait<0>(); }

  template <class Params, class TensorO>
  __device__ static void store(Params const& p, typename T::SharedStorage& ss,
                               TileCoord const& tc, SeqInfo const& seq, int thread_idx,
                               TensorO const& tOrO, float const (&lse)[2]) {
    typename T::TiledMmaPV mma_pv;
    const int wg = thread_idx / 128, wg_thread = thread_idx % 128;
    const int row0 = tile_row0<kBlockM>(seq, tc.m_block);
    const int row_limit = tile_row_end<kBlockM>(seq, tc.m_block) - row0;
    // The TMA clips only at the end of the sequence: a tile whose last rows belong to the next
    // tile (the first one under q_pad) stores by row like varlen. Fixed-length twins (no varlen,
    // no q_pad) always use the TMA.
    const bool tma =
        Params::kFixedLength ||
        (p.cu_seqlens_q == nullptr && (row_limit >= kBlockM || row0 + row_limit == seq.seqlen_q));

    Element* o_buffer = ss.o.data();
    Tensor sO = make_tensor(make_smem_ptr(o_buffer), typename T::SmemLayoutO{});
    // The previous TMA store of these rows (the previous tile's, or this tile's previous pass)
    // must be done reading them.
    auto wait_buffer_free = [&] {
      if (wg_thread == 0) wait_store_read();
      named_barrier_sync(kFirstBarrier + wg, 128);
    };
    wait_buffer_free();

    // O in the output type; pass h stores columns [h * kOCols, (h + 1) * kOCols), whose values
    // are the h-th slice of this thread's fragment (FragmentOPass, fwd_sm90_traits.cuh).
    Tensor rO = make_tensor<Element>(tOrO.layout());
    constexpr int kN = decltype(size(tOrO))::value;
    *reinterpret_cast<cutlass::Array<Element, kN>*>(rO.data()) =
        cutlass::NumericArrayConverter<Element, float, kN>{}(
            *reinterpret_cast<cutlass::Array<float, kN> const*>(tOrO.data()));
    typename T::TiledMmaPVStore mma_store;
    auto r2s = make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, Element>{}, mma_store);
    auto thr_r2s = r2s.get_thread_slice(thread_idx);
    using PassLayout = typename T::FragmentOPass::layout_type;
    constexpr int kPassValues = size_v<typename T::FragmentOPass>;

    // Passes as compile-time constants (Int<0>, Int<1>): the TMA coordinates stay static.
    cute::for_each(make_int_sequence<T::kOPasses>{}, [&](auto pass) {
      if constexpr (decltype(pass)::value > 0) wait_buffer_free();
      // Registers -> shared memory (stmatrix).
      Tensor rO_pass = make_tensor(rO.data() + pass * kPassValues, PassLayout{});
      copy(r2s, thr_r2s.retile_S(rO_pass), thr_r2s.partition_D(sO));

      if (tma) {
        // Shared memory -> global by one TMA store of this warpgroup's 64 rows; the TMA clips rows
        // past seqlen_q and columns past the true head dim. First the stmatrix writes are made
        // visible to the TMA (async proxy).
        cutlass::arch::fence_view_async_shared();
        named_barrier_sync(kFirstBarrier + wg, 128);
        if (wg_thread == 0) {
          Tensor mO = p.tma_o.get_tma_tensor(p.shape_o)(_, _, tc.head, tc.batch);
          Tensor gO = local_tile(domain_offset(make_coord(row0, _0{}), mO),
                                 Shape<_64, Int<T::kOCols>>{}, make_coord(wg, pass));
          Tensor sOw = make_tensor(make_smem_ptr(o_buffer + wg * 64 * T::kOCols),
                                   typename T::SmemLayoutOWarpGroup{});
          auto part = tma_partition(p.tma_o, _0{}, Layout<_1>{}, group_modes<0, 2>(sOw),
                                    group_modes<0, 2>(gO));
          copy(p.tma_o, get<1>(part), get<0>(part));  // (gmem, smem) partitions
          tma_store_arrive();
        }
      } else if constexpr (!Params::kFixedLength) {
        named_barrier_sync(kFirstBarrier + wg, 128);
        // Shared memory -> global, this warpgroup's 64 rows, 16-byte coalesced stores.
        constexpr int kPassChunks = T::kOCols / 8;
        for (int i = wg_thread; i < 64 * kPassChunks; i += 128) {
          const int row = wg * 64 + i / kPassChunks, col = (i % kPassChunks) * 8;
          if (row < row_limit && pass * T::kOCols + col < p.head_dim) {
            *reinterpret_cast<uint4*>(out_row(p, tc, seq, row) + pass * T::kOCols + col) =
                *reinterpret_cast<uint4 const*>(&sO(row, col));
          }
        }
      }
    });

    if (p.lse != nullptr && thread_idx % 4 == 0) {
      Tensor cO = mma_pv.get_thread_slice(thread_idx)
                      .partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
      Tensor coord = make_tensor(cO.data(), rowcol(cO.layout()));
      CUTE_UNROLL
      for (int r = 0; r < 2; ++r) {
        const int row = get<0>(coord(r, 0));
        if (row < row_limit) *lse_at(p, tc, seq, row) = lse[r];
      }
    }
  }

  // A tile whose rows see no key: O = 0, LSE = -inf, written straight from registers.
  template <class Params>
  __device__ static void store_empty(Params const& p, TileCoord const& tc, SeqInfo const& seq,
                                     int thread_idx) {
    const int wg = thread_idx / 128, wg_thread = thread_idx % 128;
    const int row_limit =
        tile_row_end<kBlockM>(seq, tc.m_block) - tile_row0<kBlockM>(seq, tc.m_block);
    for (int i = wg_thread; i < 64 * kChunks; i += 128) {
      const int row = wg * 64 + i / kChunks, col = (i % kChunks) * 8;
      if (row < row_limit && col < p.head_dim) {
        *reinterpret_cast<uint4*>(out_row(p, tc, seq, row) + col) = make_uint4(0, 0, 0, 0);
      }
    }
    if (p.lse != nullptr && wg_thread < 64) {
      const int row = wg * 64 + wg_thread;
      if (row < row_limit) *lse_at(p, tc, seq, row) = -INFINITY;
    }
  }
};

}  // namespace deepwell::attention::sm90
