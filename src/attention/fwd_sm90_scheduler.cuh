// Persistent tile scheduler of the sm_90 attention forward kernel, and the per-tile geometry
// (which rows, which keys) that the producer and the consumers must agree on.
//
// A tile is (m_block, head, batch): kBlockM query rows of one head. The grid has kCtasPerSm CTAs
// per SM (one; three for the short causal d = 64 tile) and in round r CTA c takes tile
// r * grid + c (r even) or r * grid + grid - 1 - c (r odd): the snake pairs a CTA that got one of
// the heavier tiles of a round with one of the lighter ones in the next. Tiles are numbered in a
// fixed order:
//  - non-causal: heads outer, m-blocks inner, so CTAs running at the same time share a head's K/V
//    in L2;
//  - with a right-bounded (causal) mask: the heaviest m-blocks first (longest processing time
//    first), so the round-robin hands every CTA a similar amount of work, within groups of
//    group_bh heads. With many m-blocks per head the group is all heads. With few (S up to ~4k)
//    a round of heaviest-first tiles would be one m-block of ~grid different heads, each CTA
//    reading its own K/V; groups of ~grid / 4 heads put ~4 m-blocks of each head in a round, so
//    ~4 CTAs share its K/V in L2 (launcher: kCausalGroupCtasPerHead, kCausalGroupMaxMBlocks).
#pragma once

#include "attention/fwd_sm90_traits.cuh"

namespace deepwell::attention::sm90 {

struct TileCoord {
  int m_block, head, batch;
  int split;   // which range of the tile's key blocks (0 without split-KV or a split tail)...
  int splits;  // ...of how many
  int tail;    // split tail: the tile's index among the split tiles (-1: not split there)
};

// The tile index of this CTA's round r (>= num_tiles: no more work).
__device__ __forceinline__ int tile_of_round(int round) {
  const int c = (round & 1) ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  return round * int(gridDim.x) + c;
}

// Work unit `tile` -> tile coordinates. Split-KV: the splits of a tile are consecutive units (CTAs
// running together read different key ranges of one head). Split tail: units from tail_first on
// are the last tiles' splits, tail_splits per tile, split 0 last: it waits for the others
// (fwd_sm90_tail.cuh), and a CTA runs its units in increasing order, so every unit it waits for
// has a lower index: it ran earlier on the same CTA or runs on another CTA of the resident grid,
// and it never waits itself.
template <class Params>
__device__ __forceinline__ TileCoord tile_coord(Params const& p, int tile) {
  int split = 0, splits = p.num_splits, tail = -1;
  if (Params::kSplitTail && tile >= p.tail_first) {
    const int rel = tile - p.tail_first;
    tail = rel / p.tail_splits;
    split = p.tail_splits - 1 - rel % p.tail_splits;
    splits = p.tail_splits;
    tile = p.tail_first + tail;
  } else if (!Params::kFixedLength && p.num_splits > 1) {
    split = tile % p.num_splits;
    tile /= p.num_splits;
  }
  const int bh_count = p.heads * p.batch;
  int m_block, bh;
  if (!Params::kDenseOnly && p.longest_first) {
    // Groups of group_bh heads, one after the other; inside a group the heaviest m-blocks first.
    const int per_group = p.group_bh * p.num_m_blocks;
    const int g = tile / per_group, r = tile % per_group;
    const int heads_in_group = min(p.group_bh, bh_count - g * p.group_bh);
    m_block = p.num_m_blocks - 1 - r / heads_in_group;
    bh = g * p.group_bh + r % heads_in_group;
  } else {
    bh = tile / p.num_m_blocks;
    m_block = tile % p.num_m_blocks;
  }
  return {m_block, bh % p.heads, bh / p.heads, split, splits, tail};
}

// Where sequence `batch` lives: its first packed row (0 for fixed-length) and its length, for q and
// k. Offsets read from cu_seqlens are clamped to the packed tensors, so bad offsets can never make
// the kernel read or write outside them.
//
// q_pad (right-bounded masks, p.pad_front): where seqlen_q is not a multiple of kBlockM, the last
// tile has rows past the end that its warpgroups compute for nothing, and under a causal mask it
// is the heaviest tile. The tiles are then shifted up by q_pad rows, so that most of those idle
// rows move into the first (lightest) tile: tile 0 covers rows [0, kBlockM) but stores only
// [0, kBlockM - q_pad) and needs keys only for those; tile m > 0 covers [m kBlockM - q_pad,
// (m + 1) kBlockM - q_pad). q_pad is the idle row count rounded down to a multiple of kBlockN:
// work is counted in key-block steps, and a shift by part of a key block ends every shifted
// tile's diagonal inside a block, so each tile runs as many steps as before and masks one more
// (the since-retired 192 x 96 d = 64 causal tile at S = 2k shifted by 64 rows: 132 steps per head
// either way, 3 % slower).
// No coordinate is negative and no row is stored twice.
struct SeqInfo {
  int q_offset, seqlen_q, k_offset, seqlen_k, q_pad;
};

template <int kBlockM, int kBlockN, class Params>
__device__ __forceinline__ SeqInfo seq_info(Params const& p, int batch) {
  SeqInfo s{0, p.seqlen_q, 0, p.seqlen_k, 0};
  if (!Params::kFixedLength && p.cu_seqlens_q != nullptr) {
    const int q0 = min(max(p.cu_seqlens_q[batch], 0), p.total_q);
    const int q1 = min(max(p.cu_seqlens_q[batch + 1], q0), p.total_q);
    const int k0 = min(max(p.cu_seqlens_k[batch], 0), p.total_k);
    const int k1 = min(max(p.cu_seqlens_k[batch + 1], k0), p.total_k);
    s = {q0, q1 - q0, k0, k1 - k0, 0};
  }
  if (!Params::kFixedLength && p.pad_front) {
    const int idle = (kBlockM - s.seqlen_q % kBlockM) % kBlockM;  // rows past the end
    s.q_pad = idle - idle % kBlockN;
  }
  return s;
}

// The first query row of tile m_block (relative to its sequence), and the end (exclusive) of the
// rows it stores; see q_pad above.
template <int kBlockM>
__device__ __forceinline__ int tile_row0(SeqInfo const& s, int m_block) {
  return m_block == 0 ? 0 : m_block * kBlockM - s.q_pad;
}
template <int kBlockM>
__device__ __forceinline__ int tile_row_end(SeqInfo const& s, int m_block) {
  return min(s.seqlen_q, (m_block + 1) * kBlockM - s.q_pad);
}

// The key blocks [lo, hi) that the rows of tile tc.m_block store can see (FlashAttention's
// bottom-right aligned causal/window rule), and of those, range tc.split of tc.splits
// (ceil(blocks / splits) blocks each, the last ones shorter or empty). hi <= lo means none.
template <int kBlockM, int kBlockN, class Params>
__device__ __forceinline__ void key_block_range(Params const& p, SeqInfo const& s,
                                                TileCoord const& tc, int* lo, int* hi) {
  const int m0 = tile_row0<kBlockM>(s, tc.m_block);
  const int m_last = tile_row_end<kBlockM>(s, tc.m_block) - 1;  // the last row the tile stores
  const int shift = s.seqlen_k - s.seqlen_q;  // diagonal of row i is key i + shift
  int key_hi = s.seqlen_k;                    // exclusive
  int key_lo = 0;
  if constexpr (!Params::kDenseOnly) {
    if (p.window_right >= 0) key_hi = min(key_hi, m_last + shift + p.window_right + 1);
    if (p.window_left >= 0) key_lo = max(0, m0 + shift - p.window_left);
  }
  *lo = key_lo / kBlockN;
  *hi = key_hi <= key_lo ? *lo : (key_hi + kBlockN - 1) / kBlockN;
  if (!Params::kFixedLength && tc.splits > 1) {
    const int per_split = (*hi - *lo + tc.splits - 1) / tc.splits;
    *lo += tc.split * per_split;
    *hi = min(*hi, *lo + per_split);
  }
}

// A tile with work: its coordinates, sequence and key blocks [n_lo, n_hi).
struct TileWork {
  TileCoord tc;
  SeqInfo seq;
  int n_lo, n_hi;
};

// This CTA's first tile with work at round `round` or later; advances `round` to it. False when
// none is left.
template <int kBlockM, int kBlockN, class Params>
__device__ __forceinline__ bool next_work(Params const& p, int& round, TileWork& w) {
  for (int t = tile_of_round(round); t < p.num_tiles; t = tile_of_round(++round)) {
    w.tc = tile_coord(p, t);
    w.seq = seq_info<kBlockM, kBlockN>(p, w.tc.batch);
    if (tile_row0<kBlockM>(w.seq, w.tc.m_block) >= w.seq.seqlen_q) continue;
    key_block_range<kBlockM, kBlockN>(p, w.seq, w.tc, &w.n_lo, &w.n_hi);
    if (w.n_hi > w.n_lo) return true;
  }
  return false;
}

}  // namespace deepwell::attention::sm90
