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

template <int kGroupM>
struct GroupedTileScheduler {
  static_assert(kGroupM >= 1, "a group has at least one m-block");
  int32_t m_blocks, n_blocks, tiles;

  __host__ __device__ GroupedTileScheduler(int32_t m_blocks_, int32_t n_blocks_, int32_t batch)
      : m_blocks(m_blocks_), n_blocks(n_blocks_), tiles(m_blocks_ * n_blocks_ * batch) {}

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
    c.m_block = first_m + within % rows;
    c.n_block = within / rows;
    return c;
  }
};

}  // namespace deepwell::matmul::sm90::fp8
