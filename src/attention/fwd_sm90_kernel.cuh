// The sm_90 attention forward kernel (warp-specialized, persistent) and its host-side launcher.
//
//   warpgroup 0 (producer, 24-32 registers): one warp issues TMA loads (fwd_sm90_mainloop.cuh)
//   warpgroups 1.. (consumers, 136-240 registers): wgmma + online softmax, then the epilogue
//   (kCtasPerSm of these CTAs share an SM: fwd_sm90_config.hpp)
//
// Include this only from the instance files fwd_sm90_inst_*.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "attention/fwd_combine.hpp"
#include "attention/fwd_sm90_epilogue.cuh"
#include "attention/fwd_sm90_mainloop.cuh"
#include "attention/fwd_sm90_tail.cuh"
#include "attention/problem.hpp"
#include "core/cuda_utils.hpp"

namespace deepwell::attention::sm90 {

template <class Traits>
__global__ void __launch_bounds__(Traits::kNumThreads, Traits::kCtasPerSm)
    attention_fwd_kernel(CUTE_GRID_CONSTANT FwdParams<Traits> const p) {
  using T = Traits;
  using Pipeline = typename T::PipelineKV;
  constexpr int kBlockM = T::kBlockM, kBlockN = T::kBlockN;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& ss = *reinterpret_cast<typename T::SharedStorage*>(smem_raw);
  // With split-KV the combine (fwd_combine.cu) is launched as a programmatic dependent of this
  // kernel: it may launch now, and waits for this grid's completion itself.
  if (p.num_splits > 1) asm volatile("griddepcontrol.launch_dependents;");

  const int warp_group = threadIdx.x / 128;
  const int warp_idx = cutlass::canonical_warp_idx_sync();
  const bool lane_leader = cute::elect_one_sync();

  if (warp_idx == 0 && lane_leader) {
    cute::prefetch_tma_descriptor(p.tma_q.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
    for (int i = 0; i < T::kQStages; ++i) {
      cutlass::arch::ClusterTransactionBarrier::init(&ss.q_full[i], 1);
      cutlass::arch::ClusterBarrier::init(&ss.q_empty[i], T::kNumMmaThreads);
    }
  }
  typename Pipeline::Params pipe_params;
  pipe_params.transaction_bytes = T::kKVBytes;
  pipe_params.role = warp_group == 0 ? Pipeline::ThreadCategory::Producer
                                     : Pipeline::ThreadCategory::Consumer;
  pipe_params.is_leader = warp_idx == 0 && lane_leader;
  pipe_params.num_consumers = T::kNumMmaThreads;
  Pipeline pipe_k(ss.pipeline_k, pipe_params, Shape<_1, _1, _1>{});
  Pipeline pipe_v(ss.pipeline_v, pipe_params, Shape<_1, _1, _1>{});
  __syncthreads();  // barrier initialization is visible to every thread

  if (warp_group == 0) {
    cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegs>();
    // One thread runs the whole producer. TMA issue (UTMALDG) is a warp-uniform instruction: in a
    // warp whose lanes diverge around it (one lane waiting on a barrier while the others run on),
    // each divergent group would issue it again.
    if (warp_idx != 0 || !lane_leader) return;
    auto k_state = cutlass::make_producer_start_state<Pipeline>();
    auto v_state = cutlass::make_producer_start_state<Pipeline>();
    int q_loads = 0;
    int round = 0;
    TileWork cur;
    bool has_cur = next_work<kBlockM, kBlockN>(p, round, cur);
    // Double-buffered Q is loaded one tile ahead: the first tile's here, each next one's while
    // the current tile's K/V stream in.
    if (T::kQStages > 1 && has_cur) Mainloop<T>::load_q(p, ss, cur, q_loads);
    while (has_cur) {
      int next_round = round + 1;
      TileWork next;
      const bool has_next = next_work<kBlockM, kBlockN>(p, next_round, next);
      Mainloop<T>::load_kv(p, ss, pipe_k, pipe_v, k_state, v_state, cur, [&] {
        if constexpr (T::kQStages == 1) {
          Mainloop<T>::load_q(p, ss, cur, q_loads);
        } else {
          if (has_next) Mainloop<T>::load_q(p, ss, next, q_loads);
        }
      });
      round = next_round;
      cur = next;
      has_cur = has_next;
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<T::kConsumerRegs>();
    const int thread_idx = threadIdx.x - 128;
    if (Mainloop<T>::takes_turns(p)) Mainloop<T>::Turns::init(thread_idx / 128);
    typename Pipeline::PipelineState k_state, v_state;
    if constexpr (T::kCrossTile) {
      Mainloop<T>::compute_tiles_cross(p, ss, pipe_k, pipe_v, k_state, v_state, thread_idx);
      return;
    }
    int q_tiles = 0;  // tiles whose Q this thread has used: Q stage q_tiles % kQStages is next
    for (int round = 0, t = tile_of_round(0); t < p.num_tiles; t = tile_of_round(++round)) {
      const TileCoord tc = tile_coord(p, t);
      const SeqInfo seq = seq_info<kBlockM, kBlockN>(p, tc.batch);
      if (tile_row0<kBlockM>(seq, tc.m_block) >= seq.seqlen_q) continue;
      int n_lo, n_hi;
      key_block_range<kBlockM, kBlockN>(p, seq, tc, &n_lo, &n_hi);
      if (n_hi <= n_lo) {
        if constexpr (T::kSplitTail) {
          // A split-tail unit with no keys (the host's plan makes none; the producer skips it)
          // still counts in, so that its split 0 never waits forever. Split 0 has keys whenever
          // any split has (its range comes first).
          if (tc.tail >= 0 && tc.split != 0) {
            Tail<T>::publish_empty(p, tc, thread_idx);
            continue;
          }
        }
        // (Dense calls have keys for every tile.)
        if constexpr (!T::kDenseOnly) {
          Epilogue<T>::store_empty(p, output_coord(p, tc), seq, thread_idx);
        }
        continue;
      }
      typename T::TiledMmaPV mma_pv;
      Tensor tOrO = partition_fragment_C(mma_pv, select<0, 1>(typename T::TileShapePV{}));
      float lse[2];
      Mainloop<T>::compute(p, ss, pipe_k, pipe_v, k_state, v_state, tc, seq, n_lo, n_hi, q_tiles,
                           thread_idx, tOrO, lse);
      cutlass::arch::ClusterBarrier::arrive(&ss.q_empty[q_tiles % T::kQStages]);  // Q not read
      ++q_tiles;
      if constexpr (T::kSplitTail) {
        if (tc.tail >= 0) {
          if (tc.split != 0) {
            Tail<T>::publish(p, tc, thread_idx, tOrO, lse);
            continue;
          }
          Tail<T>::merge(p, tc, thread_idx, tOrO, lse);
        }
      }
      Epilogue<T>::store(p, ss, output_coord(p, tc), seq, thread_idx, tOrO, lse);
    }
    // Shared memory must outlive the last TMA store's reads.
    if (thread_idx % 128 == 0) Epilogue<T>::wait_store_read();
  }
}

// ------------------------------------------------------------------------------------ launcher

// A TMA stride must be a non-zero multiple of 16 bytes below 2^40; a dimension of size 1 is never
// stepped over, so any valid stride does.
inline int64_t tma_stride(int64_t stride, int64_t size) { return size <= 1 ? 8 : stride; }

// Causal tile order (fwd_sm90_scheduler.cuh): heaviest-first inside groups of about grid / 4 heads,
// so a round of tiles holds ~4 m-blocks of each head and ~4 CTAs share each K/V in L2 (perf-notes
// items 17-18; H100, x cuDNN, all heads -> groups of grid / 4): S = 1k d=128 0.77 -> 1.13, d=256
// 0.76 -> 1.08; S = 2k d=128 0.76 -> 1.12, d=64 0.85 -> 0.99; S = 4k within 5%. From 64 m-blocks
// per head (S = 8k at 128-row tiles) heaviest-first over all heads is faster (1.09-1.13x against
// 0.97-1.05x for groups of 24).
constexpr int kCausalGroupCtasPerHead = 4;
constexpr int kCausalGroupMaxMBlocks = 32;

template <class Element, int kHeadDim, class Tile>
Status launch_fwd_sm90(const Problem& prob, const Context& ctx, const SplitPlan& split) {
  using T = FwdTraits<Element, kHeadDim, Tile>;
  constexpr std::string_view kOp = "attention_forward";

  // Sizes travel as int32 and strides must stay below the TMA limit of 2^40 bytes.
  const int64_t limits[] = {prob.batch, prob.heads_q, prob.total_q, prob.total_k, prob.seqlen_q,
                            prob.seqlen_k};
  for (int64_t v : limits) {
    if (v >= (int64_t{1} << 31)) {
      return Status(StatusCode::kNotSupported,
                    std::string(kOp) + ": sizes of 2^31 or more are not supported on CUDA");
    }
  }
  const RowStrides* strides[] = {&prob.q_stride, &prob.k_stride, &prob.v_stride, &prob.o_stride};
  for (const RowStrides* s : strides) {
    for (int64_t v : {s->batch, s->row, s->head}) {
      if (v * int64_t(sizeof(Element)) >= (int64_t{1} << 40)) {
        return Status(StatusCode::kNotSupported,
                      std::string(kOp) + ": strides of 2^40 bytes or more are not supported");
      }
    }
  }

  if constexpr (T::kDenseOnly) {
    // The twin has no code for anything else (fwd_sm90_config.hpp, DenseOnly).
    if (!dense_only_applies(prob.varlen, prob.window_left, prob.window_right, prob.seqlen_k,
                            T::kBlockN, std::max(1, split.splits), split.tail.tiles)) {
      return Status(StatusCode::kInternal, std::string(kOp) +
                                               ": a dense-only instance planned for a call it "
                                               "does not run");
    }
  }
  if constexpr (T::kFixedLength && !T::kDenseOnly) {
    // The twin has no varlen, split or shifted-tile code (fwd_sm90_config.hpp, FixedLength).
    if (!fixed_length_applies(prob.varlen, prob.window_right, prob.seqlen_q, T::kBlockM,
                              T::kBlockN, std::max(1, split.splits), split.tail.tiles)) {
      return Status(StatusCode::kInternal, std::string(kOp) +
                                               ": a fixed-length instance planned for a call it "
                                               "does not run");
    }
  }
  FwdParams<T> p;
  const bool varlen = prob.varlen;
  const int d = static_cast<int>(prob.head_dim);
  const int batches = varlen ? 1 : static_cast<int>(prob.batch);
  const int rows_q = std::max<int>(1, static_cast<int>(varlen ? prob.total_q : prob.seqlen_q));
  const int rows_k = std::max<int>(1, static_cast<int>(varlen ? prob.total_k : prob.seqlen_k));
  auto gmem = [&](const void* ptr, int rows, int heads, const RowStrides& s) {
    return make_tensor(
        make_gmem_ptr(static_cast<Element const*>(ptr)),
        make_layout(make_shape(rows, d, heads, batches),
                    make_stride(tma_stride(s.row, rows), _1{}, tma_stride(s.head, heads),
                                tma_stride(varlen ? 0 : s.batch, batches))));
  };
  // With no keys at all every tile is empty and K/V are never read; their descriptors still need
  // a valid address.
  const bool no_keys = prob.total_k == 0 || prob.seqlen_k == 0;
  const void* k_ptr = no_keys ? prob.q : prob.k;
  const void* v_ptr = no_keys ? prob.q : prob.v;
  p.shape_q = make_shape(rows_q, d, static_cast<int>(prob.heads_q), batches);
  p.shape_k = make_shape(rows_k, d, static_cast<int>(prob.heads_kv), batches);
  p.tma_q = make_tma_copy(SM90_TMA_LOAD{}, gmem(prob.q, rows_q, prob.heads_q, prob.q_stride),
                          typename T::SmemLayoutQ{}, Shape<Int<T::kBlockM>, Int<kHeadDim>>{}, _1{});
  p.tma_k = make_tma_copy(SM90_TMA_LOAD{}, gmem(k_ptr, rows_k, prob.heads_kv, prob.k_stride),
                          take<0, 2>(typename T::SmemLayoutK{}),
                          Shape<Int<T::kBlockN>, Int<kHeadDim>>{}, _1{});
  p.tma_v = make_tma_copy(SM90_TMA_LOAD{}, gmem(v_ptr, rows_k, prob.heads_kv, prob.v_stride),
                          take<0, 2>(typename T::SmemLayoutV{}),
                          Shape<Int<T::kBlockN>, Int<kHeadDim>>{}, _1{});

  // Where O and the LSE go: the output, or with split-KV the partial buffers (SplitLayout in
  // fwd_combine.hpp).
  const int splits = std::max(1, split.splits);
  p.num_splits = splits;
  p.out = prob.out;
  p.o_batch_stride = prob.o_stride.batch;
  p.o_row_stride = prob.o_stride.row;
  p.o_head_stride = prob.o_stride.head;
  p.lse = prob.lse;
  p.lse_batch_stride = prob.lse_batch_stride;
  p.lse_row_stride = prob.lse_row_stride;
  p.lse_head_stride = prob.lse_head_stride;
  if (splits > 1) {
    const SplitLayout& l = split.layout;
    p.out = split.o_part;
    p.o_head_stride = d;
    p.o_row_stride = l.o_row;
    p.o_batch_stride = l.o_batch;
    p.o_split_stride = l.o_split;
    p.lse = split.lse_part;
    p.lse_row_stride = 1;
    p.lse_head_stride = l.l_head;
    p.lse_batch_stride = l.l_batch;
    p.lse_split_stride = l.l_split;
  }
  p.shape_o = make_shape(rows_q, d, static_cast<int>(prob.heads_q), batches * splits);
  if (!varlen) {
    auto mO = make_tensor(
        make_gmem_ptr(static_cast<Element*>(p.out)),
        make_layout(make_shape(rows_q, d, static_cast<int>(prob.heads_q), batches * splits),
                    make_stride(tma_stride(p.o_row_stride, rows_q), _1{},
                                tma_stride(p.o_head_stride, prob.heads_q),
                                tma_stride(p.o_batch_stride, batches * splits))));
    p.tma_o = make_tma_copy(SM90_TMA_STORE{}, mO, typename T::SmemLayoutOWarpGroup{},
                            Shape<_64, Int<T::kOCols>>{}, _1{});
  }
  p.batch = static_cast<int>(prob.batch);
  p.heads = static_cast<int>(prob.heads_q);
  p.heads_kv_group = static_cast<int>(prob.group());
  p.head_dim = d;
  p.seqlen_q = static_cast<int>(prob.seqlen_q);
  p.seqlen_k = static_cast<int>(prob.seqlen_k);
  p.total_q = static_cast<int>(prob.total_q);
  p.total_k = static_cast<int>(prob.total_k);
  p.cu_seqlens_q = prob.cu_seqlens_q;
  p.cu_seqlens_k = prob.cu_seqlens_k;
  p.softmax_scale = prob.scale;
  p.scale_log2 = prob.scale * static_cast<float>(M_LOG2E);
  p.window_left = prob.window_left < 0 ? -1 : static_cast<int>(std::min<int64_t>(prob.window_left, INT32_MAX / 2));
  p.window_right = prob.window_right < 0 ? -1 : static_cast<int>(std::min<int64_t>(prob.window_right, INT32_MAX / 2));
  p.num_m_blocks = static_cast<int>((prob.seqlen_q + T::kBlockM - 1) / T::kBlockM);
  const int64_t tiles = int64_t(p.num_m_blocks) * p.heads * p.batch * splits;
  if (tiles >= (int64_t{1} << 31)) {
    return Status(StatusCode::kNotSupported, std::string(kOp) + ": too many tiles for one launch");
  }
  p.num_tiles = static_cast<int>(tiles);
  // Split tail: the plan's last tiles run as tail.splits units each (counters cleared here).
  const SplitTail& tail = split.tail;
  if (tail.tiles > 0) {
    if (!T::kSplitTail || splits > 1 || tail.splits < 2 ||
        tail.first + int64_t{tail.tiles} != tiles ||
        tail.warpgroups != T::kNumMmaWarpGroups || tail.head_dim != kHeadDim ||
        tail.part == nullptr || tail.flags == nullptr) {
      return Status(StatusCode::kInternal, std::string(kOp) + ": inconsistent split-tail plan");
    }
    const int64_t units = tiles + int64_t{tail.tiles} * (tail.splits - 1);
    if (units >= (int64_t{1} << 31)) {
      return Status(StatusCode::kNotSupported,
                    std::string(kOp) + ": too many tiles for one launch");
    }
    p.num_tiles = static_cast<int>(units);
    p.tail_first = tail.first;
    p.tail_splits = tail.splits;
    p.tail_part = tail.part;
    p.tail_flags = tail.flags;
    DW_CUDA_TRY(kOp, cudaMemsetAsync(tail.flags, 0, tail.flag_count() * sizeof(int32_t),
                                     static_cast<cudaStream_t>(ctx.stream)));
  }
  p.longest_first = prob.window_right >= 0;
  p.pad_front = p.longest_first;
  p.pingpong = use_pingpong(kHeadDim, prob.seqlen_k);
  if (p.num_tiles == 0) return Status::Ok();

  const int device = prob.device.index;
  auto kernel = attention_fwd_kernel<T>;
  static std::atomic<bool> attribute_set[64] = {};
  if (device < 64 && !attribute_set[device].load(std::memory_order_relaxed)) {
    DW_CUDA_TRY(kOp, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          T::kSmemBytes));
    attribute_set[device].store(true, std::memory_order_relaxed);
  }
  // Persistent: kCtasPerSm CTAs per SM, or as many as the device can keep resident (asked once
  // per device: a grid larger than that would run its last CTAs only after others finished).
  // DEEPWELL_ATTN_MAX_GRID=<n> caps the grid further, so tests can make a small problem run many
  // tiles per CTA.
  static std::atomic<int> resident[64] = {};
  int per_sm = device < 64 ? resident[device].load(std::memory_order_relaxed) : 0;
  if (per_sm == 0) {
    DW_CUDA_TRY(kOp, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, T::kNumThreads,
                                                                   T::kSmemBytes));
    per_sm = std::clamp(per_sm, 1, T::kCtasPerSm);
    if (device < 64) resident[device].store(per_sm, std::memory_order_relaxed);
  }
  const detail::DeviceInfo* info = nullptr;
  DW_TRY(detail::device_info(device, &info));
  int grid = std::min(p.num_tiles, info->sm_count * per_sm);
  if (const int cap = max_grid_override()) grid = std::min(grid, cap);
  p.group_bh = p.num_m_blocks <= kCausalGroupMaxMBlocks
                   ? std::max(1, grid / kCausalGroupCtasPerHead)
                   : p.heads * p.batch;
  kernel<<<grid, T::kNumThreads, T::kSmemBytes, static_cast<cudaStream_t>(ctx.stream)>>>(p);
  return detail::last_launch_status(kOp);
}

}  // namespace deepwell::attention::sm90

// Defines the entry point of one (dtype, head-dim bucket, tile) instance.
#define DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(name, Element, kHeadDim, Tile)             \
  namespace deepwell::attention::sm90 {                                                 \
  Status name(const Problem& p, const Context& ctx, const SplitPlan& split) {            \
    return launch_fwd_sm90<Element, kHeadDim, Tile>(p, ctx, split);                     \
  }                                                                                     \
  }
