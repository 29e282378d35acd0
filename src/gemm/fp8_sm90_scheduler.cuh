// Tile scheduler of the fp8 GEMM kernel (fp8_sm90_kernel.cuh): a persistent grid of at most one CTA
// per SM walks the output tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... in a grouped order.
//
// Within one batch, the tiles are cut into groups of kGroupM m-blocks (all n-blocks of them); inside
// a group the m-block varies fastest. A wave of ~132 CTAs then covers ~8 m-blocks x ~16 n-blocks:
// the A rows and B columns it reads (8192^3: 8 + 17 MB) stay in the 50 MB L2 while the wave runs,
// instead of every CTA of a row-major order streaming its own B column block from DRAM.
#pragma once

#include <cstdint>

namespace deepwell::matmul::sm90::fp8 {

struct TileCoord {
  int32_t batch, m_block, n_block;
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

  __device__ GroupedTileScheduler(int32_t cta_m_blocks, int32_t n_blocks_, int32_t batch,
                                  int32_t rank_)
      : m_blocks((cta_m_blocks + kClusterM - 1) / kClusterM),
        n_blocks(n_blocks_),
        tiles(m_blocks * n_blocks_ * batch),
        first(static_cast<int32_t>(blockIdx.x) / kClusterM),
        stride(static_cast<int32_t>(gridDim.x) / kClusterM),
        rank(rank_) {}

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
