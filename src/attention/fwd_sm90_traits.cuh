// Types of the sm_90 attention forward kernel: tiled MMAs, shared-memory layouts, TMA copies,
// shared storage and the plain parameter struct. Everything derives from (Element, kHeadDim) and
// the tile table in fwd_sm90_config.hpp.
#pragma once

#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "attention/fwd_sm90_config.hpp"

namespace deepwell::attention::sm90 {

using namespace cute;

// TileArg: a TilePolicy (fwd_sm90_config.hpp), or its DenseOnly or FixedLength twin.
template <class Element_, int kHeadDim_, class TileArg = FwdTile<kHeadDim_>>
struct FwdTraits {
  using Tile = typename UnwrapTile<TileArg>::type;
  // Compiled for dense calls only: no varlen, mask, window, split-KV, tail or by-row store code.
  static constexpr bool kDenseOnly = UnwrapTile<TileArg>::kDenseOnly;
  // Compiled for fixed-length calls only (FixedLength or DenseOnly): no varlen, split-KV, tail,
  // by-row store or shifted-tile code.
  static constexpr bool kFixedLength = UnwrapTile<TileArg>::kFixedLength;
  // DenseOnly twins whose consumers run their tiles back to back (kCrossTile).
  static constexpr bool kCrossTile = kDenseOnly && sm90::kCrossTile<Tile>;
  using Element = Element_;  // cutlass::bfloat16_t or cutlass::half_t
  using Accum = float;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = Tile::kBlockM;
  static constexpr int kBlockN = Tile::kBlockN;
  static constexpr int kStages = Tile::kStages;
  static constexpr int kCtasPerSm = Tile::kCtasPerSm;
  static constexpr bool kConditionalRescale = sm90::kConditionalRescale<Tile>;
  static constexpr bool kOneBoundMask = sm90::kOneBoundMask<Tile>;
  static constexpr bool kTreeSoftmax = sm90::kTreeSoftmax<Tile>;
  static constexpr bool kLateVWait = sm90::kLateVWait<Tile>;
  static constexpr bool kRescaleBeforePV = sm90::kRescaleBeforePV<Tile>;
  static constexpr bool kPinPvWait = sm90::kPinPvWait<Tile>;
  static constexpr bool kSplitTail = !kFixedLength && sm90::kSplitTail<Tile>;

  // One producer warpgroup (TMA) plus one consumer warpgroup per 64 query rows.
  static constexpr int kNumMmaWarpGroups = kBlockM / 64;
  static constexpr int kNumMmaThreads = kNumMmaWarpGroups * 128;
  static constexpr int kNumThreads = kNumMmaThreads + 128;
  // Registers per thread after setmaxnreg: the CTA's share of the 64K-register file (it launches
  // with kLaunchRegs per thread, in steps of 8), mostly to the consumers (at most 240).
  static constexpr int kLaunchRegs = cute::min(255, 64 * 1024 / (kNumThreads * kCtasPerSm)) / 8 * 8;
  static constexpr int kProducerRegs = kNumMmaWarpGroups == 3 ? 32 : 24;
  static constexpr int kConsumerRegs = cute::min(
      240, (kLaunchRegs * kNumThreads - kProducerRegs * 128) / kNumMmaThreads / 8 * 8);

  static_assert(kBlockM % 64 == 0 && kNumMmaWarpGroups >= 1 && kNumMmaWarpGroups <= 3);
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "kBlockN: the N of one wgmma and the K of PV");
  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 256, "head dim: whole 128-byte swizzle atoms");
  static_assert(kCtasPerSm >= 1 && kCtasPerSm <= 3);
  static_assert(kProducerRegs * 128 + kConsumerRegs * kNumMmaThreads <= kLaunchRegs * kNumThreads,
                "register reallocation must fit the CTA's share of the 64K-register file");

  using TileShapeQK = Shape<Int<kBlockM>, Int<kBlockN>, Int<kHeadDim>>;  // (M, N, K) of S = Q K^T
  using TileShapePV = Shape<Int<kBlockM>, Int<kHeadDim>, Int<kBlockN>>;  // (M, N, K) of O = P V
  using MmaWarpGroups = Layout<Shape<Int<kNumMmaWarpGroups>, _1, _1>>;   // warpgroup w: rows 64w..

  // S = Q K^T: both operands from shared memory, K-major.
  using TiledMmaQK = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, Accum, Shape<_64, Int<kBlockN>, Int<kHeadDim>>>(),
      MmaWarpGroups{}));
  // O += P V: P from registers (the softmax output), V from shared memory, head dim contiguous.
  using TiledMmaPV = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, Accum, Shape<_64, Int<kHeadDim>, Int<kBlockN>>,
                           GMMA::Major::K, GMMA::Major::MN>(),
      MmaWarpGroups{}));

  // Shared memory: rows of kHeadDim elements in 128-byte-swizzled 8 x 64 atoms (bank-conflict-free
  // for both TMA and wgmma).
  using SmemAtom = GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutQ = decltype(tile_to_shape(SmemAtom{}, Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  using SmemLayoutK =
      decltype(tile_to_shape(SmemAtom{}, Shape<Int<kBlockN>, Int<kHeadDim>, Int<kStages>>{}));
  using SmemLayoutV = SmemLayoutK;
  // V seen as (head_dim, keys, stage): the MN-major B operand of P V.
  using SmemLayoutVt = decltype(composition(
      SmemLayoutV{}, make_ordered_layout(Shape<Int<kHeadDim>, Int<kBlockN>, Int<kStages>>{},
                                         Step<_2, _1, _3>{})));

  // Global tensors as the TMA sees them: (rows, head_dim, heads, batch), head dim contiguous.
  using GmemShape = Shape<int32_t, int32_t, int32_t, int32_t>;
  using GmemStride = Stride<int64_t, _1, int64_t, int64_t>;
  using GmemLayout = Layout<GmemShape, GmemStride>;
  using GmemTensor = decltype(make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)),
                                          GmemLayout{}));
  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{}, GmemTensor{}, SmemLayoutQ{},
                                      Shape<Int<kBlockM>, Int<kHeadDim>>{}, _1{}));
  using TmaKV = decltype(make_tma_copy(SM90_TMA_LOAD{}, GmemTensor{},
                                       take<0, 2>(SmemLayoutK{}),
                                       Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{}));

  static constexpr uint32_t kQBytes = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kKVBytes = kBlockN * kHeadDim * sizeof(Element);

  using PipelineKV = cutlass::PipelineTmaAsync<kStages>;

  // Shared memory of one CTA: 228 KB per SM, 1 KB of it reserved per CTA. What Q and the K/V rings
  // leave (less 1 KB for barriers and alignment) holds O's staging buffer and a second Q stage.
  static constexpr int kSmemLimit = 228 * 1024 / kCtasPerSm / 1024 * 1024 - 1024;
  static constexpr int kRoom =
      kSmemLimit - 1024 - int(kQBytes) - 2 * kStages * int(kKVBytes);
  // O has its own staging buffer: the consumers release Q as soon as their last Q K^T is done and
  // the next tile's Q loads during this tile's last P V and epilogue. Where only half of it fits
  // (d = 256), the buffer holds half of O's columns and the epilogue stores O in two passes (H100
  // A/B x cuDNN against staging O in Q's buffer and releasing Q after the epilogue, two runs:
  // S=512 0.905-0.922 -> 0.950-0.964 causal, 0.999-1.007 -> 1.054-1.063 non-causal; 1k
  // 0.992-1.011 -> 1.038-1.060 and 1.045-1.050 -> 1.084-1.086; perf-notes item 35). The one tile
  // that had no room even for half (d = 256 with 80 keys) is retired (item 54).
  static_assert(kRoom >= int(kQBytes) / 2, "no room for O's staging buffer, even at half width");
  static constexpr int kOCols = kRoom >= int(kQBytes) ? kHeadDim : kHeadDim / 2;
  static constexpr int kOPasses = kHeadDim / kOCols;  // epilogue store passes
  static constexpr int kOBytes = kBlockM * kOCols * int(sizeof(Element));
  // Q is double-buffered when that fits too: the next tile's Q then loads during this whole tile
  // instead of between this tile's last Q K^T and the next tile's first.
  static constexpr int kQStages = kRoom >= kOBytes + int(kQBytes) ? 2 : 1;

  // O's staging buffer: one 64-row block of kOCols columns per consumer warpgroup, each laid out
  // like Q (so one TMA box of 64 rows per 128-byte column band stores it).
  using SmemLayoutOWarpGroup = decltype(tile_to_shape(SmemAtom{}, Shape<_64, Int<kOCols>>{}));
  using SmemLayoutO =
      decltype(tile_to_shape(SmemLayoutOWarpGroup{}, Shape<Int<kBlockM>, Int<kOCols>>{}));
  // The P V product restricted to kOCols columns, for the epilogue's store passes: a thread's wgmma
  // accumulator values run over the columns in 8-column blocks, outermost, so pass h's columns
  // [h * kOCols, (h + 1) * kOCols) are values [h * n, (h + 1) * n) of O's fragment, n this
  // product's fragment size (the static_assert below checks the sizes, the tests the values).
  using TiledMmaPVStore = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, Accum, Shape<_64, Int<kOCols>, Int<kBlockN>>,
                           GMMA::Major::K, GMMA::Major::MN>(),
      MmaWarpGroups{}));

  // O is stored by TMA, 64 rows (one consumer warpgroup's) by kOCols columns at a time, when the
  // batch is not packed (varlen rows past a sequence belong to the next one, so those tiles store
  // with plain stores).
  using GmemTensorO = decltype(make_tensor(make_gmem_ptr(static_cast<Element*>(nullptr)),
                                           GmemLayout{}));
  using TmaO = decltype(make_tma_copy(SM90_TMA_STORE{}, GmemTensorO{}, SmemLayoutOWarpGroup{},
                                      Shape<_64, Int<kOCols>>{}, _1{}));

  struct SharedStorage {
    alignas(1024) cute::array_aligned<Element, cosize_v<SmemLayoutQ> * kQStages> q;
    alignas(1024) cute::array_aligned<Element, cosize_v<SmemLayoutK>> k;
    alignas(1024) cute::array_aligned<Element, cosize_v<SmemLayoutV>> v;
    alignas(1024) cute::array_aligned<Element, cosize_v<SmemLayoutO>> o;
    typename PipelineKV::SharedStorage pipeline_k;
    typename PipelineKV::SharedStorage pipeline_v;
    alignas(8) uint64_t q_full[kQStages];   // TMA of Q landed (transaction barrier)
    alignas(8) uint64_t q_empty[kQStages];  // every consumer is done with Q
    uint32_t pin;  // never written: the address of pin_after_softmax's store (fwd_sm90_mainloop.cuh)
  };
  static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage));
  static_assert(kSmemBytes <= kSmemLimit, "shared memory per block on sm_90");
  static_assert(cosize_v<SmemLayoutOWarpGroup> * kNumMmaWarpGroups == cosize_v<SmemLayoutO>);
  static_assert(kOCols % 64 == 0 && kOPasses * kOCols == kHeadDim);
  using FragmentO = decltype(partition_fragment_C(TiledMmaPV{}, select<0, 1>(TileShapePV{})));
  using FragmentOPass =
      decltype(partition_fragment_C(TiledMmaPVStore{}, Shape<Int<kBlockM>, Int<kOCols>>{}));
  static_assert(size_v<FragmentO> == kOPasses * size_v<FragmentOPass>);
};

// Plain parameters of one launch. Sizes are int32 (the launcher checks they fit); strides int64.
template <class Traits>
struct FwdParams {
  static constexpr bool kSplitTail = Traits::kSplitTail;  // the tail's code compiled in
  static constexpr bool kDenseOnly = Traits::kDenseOnly;  // dense calls only (DenseOnly)
  static constexpr bool kFixedLength = Traits::kFixedLength;  // fixed lengths only (also DenseOnly)
  typename Traits::TmaQ tma_q;
  typename Traits::TmaKV tma_k, tma_v;
  typename Traits::TmaO tma_o;  // unused for varlen (cu_seqlens_q set)
  typename Traits::GmemShape shape_q, shape_k;  // (rows, d, heads, batch) as given to the TMAs
  typename Traits::GmemShape shape_o;  // O's: shape_q, or (rows, d, heads, batch x splits)

  void* out = nullptr;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  float* lse = nullptr;  // optional
  int64_t lse_batch_stride = 0, lse_row_stride = 0, lse_head_stride = 0;

  int batch = 0, heads = 0, heads_kv_group = 1, head_dim = 0;
  int seqlen_q = 0, seqlen_k = 0;  // fixed lengths, or the max lengths for varlen
  int total_q = 0, total_k = 0;    // rows of the packed tensors (varlen)
  const int* cu_seqlens_q = nullptr;  // null: fixed-length batch
  const int* cu_seqlens_k = nullptr;

  float softmax_scale = 1.f;
  float scale_log2 = 1.f;  // softmax_scale * log2(e): softmax runs in base 2
  int window_left = -1;    // < 0: unbounded
  int window_right = -1;   // < 0: unbounded (causal: 0)

  int num_m_blocks = 0;
  int num_tiles = 0;
  bool longest_first = false;  // schedule the heaviest (causal) m-blocks first...
  int group_bh = 1;            // ...within groups of this many (batch, head) pairs
  bool pad_front = false;      // the partial m-block first (SeqInfo::q_pad): right-bounded masks
  bool pingpong = true;  // consumer warpgroups take turns (use_pingpong, fwd_sm90_config.hpp)

  // Split-KV (num_splits > 1): each tile's key blocks are cut into num_splits ranges, each its own
  // work unit, whose O (normalized over its keys) and LSE go to `out` / `lse`, the partial
  // buffers, at split * o_split_stride / lse_split_stride (fwd_combine.cu merges them).
  int num_splits = 1;
  int64_t o_split_stride = 0, lse_split_stride = 0;

  // Split tail (SplitTail in fwd_combine.hpp; only with num_splits == 1): work units from
  // tail_first on are the splits of the last tiles, tail_splits per tile (tile_coord); splits
  // 1.. publish into tail_part and count in tail_flags, split 0 merges (fwd_sm90_tail.cuh).
  int tail_first = 0x7fffffff;
  int tail_splits = 1;
  float* tail_part = nullptr;
  int32_t* tail_flags = nullptr;
};

}  // namespace deepwell::attention::sm90
