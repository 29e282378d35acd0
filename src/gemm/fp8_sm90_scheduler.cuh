// Tile scheduler of the fp8 GEMM kernel (fp8_sm90_kernel.cuh): a persistent grid of at most one CTA
// per SM walks the output tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... in a grouped order.
//
// Within one batch, the tiles are cut into groups of kGroupM m-blocks (all n-blocks of them); inside
// a group the m-block varies fastest. A wave of ~132 CTAs then covers ~8 m-blocks x ~16 n-blocks:
// the A rows and B columns it reads (8192^3: 8 + 17 MB) stay in the 50 MB L2 while the wave runs,
// instead of every CTA of a row-major order streaming its own B column block from DRAM.
//
// Split tail (Decomposition::kSplitTail): where the tiles do not fill whole rounds of the grid,
// the last round's tiles are each cut along K into `splits` work units, so every CTA of the
// grid has work in that round instead of a few (4096x7168 at 128x192: 1216 tiles = 9 rounds of
// 132 and 28 tiles; 4 splits run them on 112 CTAs). A CTA walks its units u = blockIdx.x,
// + gridDim.x, ...; units below `full` are whole tiles, the rest split units, consecutive ones
// of one tile on consecutive CTAs. The kernel sums a tile's splits through the workspace: the
// split with the last k-blocks adds the others' partial sums to its own and stores the tile.
#pragma once

#include <cstdint>

namespace deepwell::matmul::sm90::fp8 {

struct TileCoord {
  int32_t batch, m_block, n_block;
};

// One work unit: tile `c`, k-blocks [kb_begin, kb_end). `tail` < 0 for a whole tile, else the
// index of the split tile (its workspace slot) and `split` which of its splits this is.
struct WorkUnit {
  TileCoord c;
  int32_t kb_begin, kb_end;
  int32_t tail, split;
  __device__ __forceinline__ bool reduces() const { return tail < 0 || split == 0; }
};

// kClusterM CTAs of a cluster take kClusterM consecutive m-blocks of one n-block (they share, and
// multicast, the B tile): the order below walks "cluster tiles" of kClusterM m-blocks, and CTA
// `rank` of the cluster takes m-block kClusterM * m + rank (which may lie past the last m-block
// when their count is odd: that CTA still loads its share of B for its peer, its A box is
// zero-filled and its epilogue stores nothing).
template <int kGroupM, int kClusterM>
struct GroupedTileScheduler {
  static_assert(kGroupM >= 1, "a group has at least one m-block");
  int32_t m_blocks, n_blocks, tiles;  // in cluster tiles
  int32_t first, stride;              // this cluster's first cluster tile, clusters in the grid
  int32_t rank;                       // CTA rank in the cluster
  int32_t k_blocks;
  int32_t full;    // tiles run whole (all of them without a split tail)
  int32_t splits;  // work units per tile past `full`
  int32_t units;   // full + (tiles - full) * splits

  __device__ GroupedTileScheduler(int32_t cta_m_blocks, int32_t n_blocks_, int32_t batch,
                                  int32_t rank_, int32_t k_blocks_, int32_t tail_tiles,
                                  int32_t splits_)
      : m_blocks((cta_m_blocks + kClusterM - 1) / kClusterM),
        n_blocks(n_blocks_),
        tiles(m_blocks * n_blocks_ * batch),
        first(static_cast<int32_t>(blockIdx.x) / kClusterM),
        stride(static_cast<int32_t>(gridDim.x) / kClusterM),
        rank(rank_),
        k_blocks(k_blocks_),
        full(tiles - tail_tiles),
        splits(splits_),
        units(full + tail_tiles * splits_) {}

  // Work unit u: a whole tile below `full`, else split `split` of tail tile `tail`, whose k-blocks
  // are the split's share of k_blocks (splits <= k_blocks, so none is empty). Split 0 holds the
  // last k-blocks: it runs on the highest CTA of its tile's, which the hardware dispatches last.
  __device__ __forceinline__ WorkUnit unit(int32_t u) const {
    WorkUnit w;
    if (u < full) {
      w.c = coord(u);
      w.kb_begin = 0;
      w.kb_end = k_blocks;
      w.tail = -1;
      w.split = 0;
      return w;
    }
    const int32_t v = u - full;
    w.tail = v / splits;
    w.split = splits - 1 - (v - w.tail * splits);
    w.c = coord(full + w.tail);
    const int32_t piece = splits - 1 - w.split;  // k order: piece 0 first
    w.kb_begin = static_cast<int32_t>(int64_t{k_blocks} * piece / splits);
    w.kb_end = static_cast<int32_t>(int64_t{k_blocks} * (piece + 1) / splits);
    return w;
  }

  __device__ __forceinline__ TileCoord coord(int32_t t) const {
    const int32_t per_batch = m_blocks * n_blocks;
    TileCoord c;
    c.batch = t / per_batch;
    const int32_t r = t - c.batch * per_batch;
    const int32_t group_tiles = kGroupM * n_blocks;
    const int32_t group = r / group_tiles;
    const int32_t first_m = group * kGroupM;
    const int32_t rows = min(m_blocks - first_m, kGroupM);  // the last group may be short
    const int32_t within = r - group * group_tiles;
    c.m_block = (first_m + within % rows) * kClusterM + rank;
    c.n_block = within / rows;
    return c;
  }
};

}  // namespace deepwell::matmul::sm90::fp8
