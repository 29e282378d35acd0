// CUDA kernels for quantize() calls with the transposed copy, and for 128x128 blocks (sm_90a):
// data = quantize(x) and data_t = quantize(x^T) of a 2-D, contiguous x (R, K), both from ONE read
// of x; kFp8Block128x128 (any batch, with or without data_t) goes through the same kernel.
//
// quantize_tile<In, Fmt> (the kernels quantize_tile_kernel and _kernel4): Fmt (TileFormat) fixes
// the format and element type at compile time, so the scale rule of a chunk is straight-line
// code. A 256-thread CTA walks
// `tiles_per_cta` tiles of 128 rows x kTK columns (tile_cols: 128, or 64 for NVFP4 and kFp8Row;
// a 128-column CTA takes one tile) down one column strip of x (kMxfp8: along one row strip,
// walks_along_k), double-buffered when it walks more than one (one tile buffer
// otherwise): the 16-byte cp.async loads of tile t+1 are in flight while tile t is encoded (edge
// tiles too, the units outside x zero-filled; only an x whose rows are not 16-byte aligned is
// loaded with plain element loads).
// Per tile:
//  0. kFp8Block128x128: the tile's amax (block reduce) is the block's scale.
//  1. rows: each thread encodes 16-element chunks of tile rows (group amax over kBlock/16
//     adjacent lanes with shuffles, as quantize_groups_kernel) and stores them to data.
//  2. columns (when data_t is requested): a unit is (column pair, 16 rows); the 32 lanes of a
//     warp take the 8 row chunks (lane & 7) of 4 adjacent column pairs, so that their 16-byte
//     code stores (fp4: 8-byte) cover whole 128-byte (fp4: 64-byte) segments of 4 data_t rows,
//     and the chunks of a column's scale group sit in adjacent lanes: the group amax is a
//     shuffle, as for rows. A unit's 16 rows are read as 16 4-byte words (two 16-bit columns per
//     word) whose addresses differ by constants.
// The tile sits in shared memory XOR-swizzled in 16-byte units by row chunk (unit u of row rr at
// u ^ (rr / 16 % 8)), so the 8 rows 16 apart that a warp's column reads touch fall in 8
// different bank groups; the row pass and cp.async move whole units.
// Amaxes of 16-bit inputs are taken on packed pairs (__vmaxu2 of |x| bits: the bits of
// non-negative bf16/f16 values order like the values, NaN above Inf), one instruction per two
// elements. data_t's rows are ld_t codes apart (>= R: the Python API pads them to 32 bytes).
// When they do not start 16-byte aligned (ld_t % 16 != 0) the column codes go
// through a per-warp stage in shared memory (the warp that encoded its 8 columns writes them out,
// behind __syncwarp) and 8 lanes write each data_t row segment: 16-byte stores from its first
// 16-byte boundary on, bytes before and after (instead of 16 single-byte stores per lane).
// Scales and codes come from codec.hpp through encode_chunk, exactly as the row kernels.
// Lean addressing (TileParams::lean, where TileFormat::kLean): without a scale swizzle and with
// aligned whole-chunk stores, a tile computes its output bases once and each chunk adds one
// 32 x 32 -> 64-bit product instead of its own 64-bit row arithmetic and alignment checks.
//
// kFp8Tensor and kNvfp4 read the tensor amax of launch_amax (quantize_sm90.cu) or the caller's;
// kFp8Row first reduces the row and the column amaxes of x in one pass (rowcol_amax_kernel,
// atomicMax into the two scale outputs), converts them to scales in place, then the tile kernel
// encodes with them: two reads of x instead of one, bound to about (in + out) / (2 in + out) of
// copy bandwidth.
#include <type_traits>

#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

constexpr int kTileR = 128;  // rows of x per tile: a multiple of every group (16, 32, 128)
constexpr int kThreads = 256;

struct TileParams {
  const void* x;  // (R, K), contiguous; kFp8Block128x128: (batch * rows2, K)
  int64_t R, K;
  int64_t rows2;            // rows per batch (tiles never straddle two batches); R unless 128x128
  int64_t tiles_per_batch;  // ceil(rows2 / 128)
  int64_t row_tiles;        // batches * tiles_per_batch
  int64_t tiles_per_cta;    // consecutive row tiles one CTA walks
  uint8_t* data;    // (R, K) codes
  void* scales;     // its scales (kFp8Row: the finished per-row scales)
  uint8_t* data_t;  // (K, R) codes, rows ld_t apart, or null (no transposed copy)
  int64_t ld_t;     // codes between rows of data_t (>= R; a multiple of 16 avoids the stage)
  void* scales_t;   // its scales (kFp8Row: the finished per-column scales of x)
  const uint32_t* amax;  // tensor amax bits (kFp8Tensor, kNvfp4)
  float* tensor_scale_out;  // the caller's amax: CTA (0, 0)'s thread 0 writes the tensor scale
  bool rceil, pow2, swizzle;
  bool vec_ok;      // x and its rows are 16-byte aligned: every tile loads by 16-byte cp.async
  bool stage_t;     // data_t rows do not start 16-byte aligned: stage its codes in shared memory
  int nbuf;         // tile buffers: 2 (double-buffered) when a CTA walks more than one tile, else 1
  int64_t C, Ct;    // scale columns of data (per row of x) and of data_t (per column of x)
  int64_t tile_row0;  // first CTA row of this launch (gridDim.y is at most 65535)
  int64_t col_tiles;  // ceil(K / kTK)
  // The walk of a CTA: false: tiles_per_cta row tiles down column tile blockIdx.x; true
  // (along_k, walks_along_k formats): tiles_per_cta column tiles along row tile tile_row0 +
  // blockIdx.y, the row scale bytes gathered in shared memory and stored once per CTA.
  bool along_k;
  // Lean addressing: no scale swizzle, whole-chunk code stores aligned (K, and ld_t with data_t,
  // multiples of 16 codes; the code pointers 16-byte (fp4: 8-byte) aligned, no stage_t) and the
  // strides below fit 32 bits. A tile then computes its output bases once in 64 bits and a chunk
  // adds one 32 x 32 -> 64-bit product (a chunk's general address cost ~15 instructions).
  bool lean;
  uint32_t ld_codes, ld_codes_t;  // bytes between rows of data and of data_t
  uint32_t C32, Ct32;             // C and Ct
};

// Tiles one CTA walks at most (the stage of along_k's row scales is sized for it).
constexpr int kMaxTilesPerCta = 4;

// Formats whose CTAs walk along K where the row has a whole walk of tiles: MXFP8 alone. Along K,
// a CTA's row scale bytes (two per row and tile) leave as a few runs per row instead of one
// partially written 32-byte L2 sector per row and tile. Measured (H200, session 58, one process,
// ratio to copy, rows -> along K): mxfp8 +T 8192² 0.753 -> 0.756-0.761, 4096x8192 0.783 ->
// 0.784-0.791, 16384x8192 0.721 -> 0.756-0.759 (L2 write sectors 8.66 -> 7.73 M at 8192²); the
// other formats lost 0-7 % along K (mxfp4 +T 0.632 -> 0.612, nvfp4 +T 0.351 -> 0.338, 1x128 +T
// 16384x8192 0.725 -> 0.676, 128x128 16384x8192 0.974 -> 0.953), so they keep the rows walk.
// Since session 59 an MXFP8 CTA takes one 128-column tile (tile_cols): its walk is that tile, the
// row scales still gathered and stored once (the form measured).
constexpr bool walks_along_k(QuantFormat f) { return f == QuantFormat::kMxfp8; }

// Columns per tile: 128 where measured faster, 64 otherwise. A 128-column tile halves the per-tile
// work per element (the tile's loads and barriers, the row pass's set-up, the column pass's unit
// arithmetic). Measured (H200, session 59, one process, bf16, ratio to copy, 64 -> 128 columns
// with one tile per CTA): mxfp8 +T 8192² 0.757 -> 0.808, 4096x8192 0.795 -> 0.825, 16384x8192
// 0.759 -> 0.812; mxfp4 +T 0.627 -> 0.662, 0.615 -> 0.652, 0.609 -> 0.651; fp8_tensor `amax=` +T
// 0.865 -> 0.867, 0.806 -> 0.861, 0.870 -> 0.886. NVFP4 lost (0.484 -> 0.426 at 8192²; its
// encoder's registers leave fewer warps per SM) and fp8_row moved -4 % .. +1 %: both keep 64.
constexpr int tile_cols(QuantFormat f) {
  return f == QuantFormat::kNvfp4 || f == QuantFormat::kFp8Row ? 64 : 128;
}

// The format of a tile launch, fixed at compile time.
template <QuantFormat F, Elem E>
struct TileFormat {
  static constexpr QuantFormat kFormat = F;
  static constexpr Elem kElem = E;
  // scale group along the encoded direction, rows and columns alike; 0: a fixed scale (the
  // tensor's, the row's or column's, or the 128x128 block's)
  static constexpr int kBlock = F == QuantFormat::kNvfp4                                  ? 16
                                : F == QuantFormat::kMxfp8 || F == QuantFormat::kMxfp4 ? 32
                                : F == QuantFormat::kFp8Block1x128                     ? 128
                                                                                       : 0;
  static constexpr int kTpg = kBlock == 0 ? 1 : kBlock / kChunk;  // chunks (lanes) per group
  static constexpr int kShift = kBlock == 128 ? 7 : kBlock == 32 ? 5 : 4;  // log2(kBlock)
  static constexpr bool kBlock128 = F == QuantFormat::kFp8Block128x128;
  static constexpr int kTK = tile_cols(F);
  static constexpr bool kWalkK = walks_along_k(F);
  // Lean addressing (TileParams::lean) is compiled where it measured faster (H200, session 60,
  // bf16 +T, ratio to copy, without -> with, together with the branch-free mx_scale): mxfp4
  // 8192² 0.677 -> 0.725, 16384x8192 0.640 -> 0.684; fp8_tensor `amax=` 0.857 -> 0.879; mxfp8
  // 0.809 -> 0.816; nvfp4 `amax=` 0.480 both. The FP32-scale formats lost 0.5-1 % (1x128 0.724 ->
  // 0.720, 128x128 0.847 -> 0.841, fp8_row 0.499 -> 0.497) and keep the general addresses.
  static constexpr bool kLean = F == QuantFormat::kMxfp4 || F == QuantFormat::kMxfp8 ||
                                F == QuantFormat::kNvfp4 || F == QuantFormat::kFp8Tensor;
  static_assert(!kWalkK || (kBlock != 0 && F != QuantFormat::kFp8Block1x128),
                "the along-K stage holds scale bytes");
  static_assert(kBlock == 0 || (1 << kShift) == kBlock, "kShift is log2(kBlock)");
  static_assert((E == Elem::kE2M1) == (F == QuantFormat::kMxfp4 || F == QuantFormat::kNvfp4),
                "e2m1 codes exactly for the fp4 formats");
};

// Raw storage of an input element in shared memory, and its exact fp32 value.
template <class In>
using Raw = std::conditional_t<sizeof(In) == 4, uint32_t, uint16_t>;

// Two adjacent columns of 16 rows as raw words: 16-bit inputs one word per row (column 0 in the
// low half), f32 two (w[2k + h]).
template <class In>
struct ColPair {
  static constexpr int kPer = sizeof(In) == 4 ? 2 : 1;  // words per row
  uint32_t w[kChunk * kPer];
  // Packed maxima: 16-bit: (column 0 | column 1 << 16) of the 16-bit |x| bits; f32: m[h].
  __device__ __forceinline__ void maxima(uint32_t (&m)[kPer]) const {
    if constexpr (sizeof(In) == 4) {
      m[0] = m[1] = 0;
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        m[0] = max(m[0], w[2 * k] & 0x7fffffffu);
        m[1] = max(m[1], w[2 * k + 1] & 0x7fffffffu);
      }
    } else {
      m[0] = pair_abs_max(w);
    }
  }
  // fp32 bits of column h's amax from the (group-combined) maxima.
  static __device__ __forceinline__ uint32_t amax(const uint32_t (&m)[kPer], int h) {
    if constexpr (sizeof(In) == 4) {
      return m[h];
    } else {
      return abs16_to_f32_bits<In>(h ? m[0] >> 16 : m[0] & 0xffffu);
    }
  }
  __device__ __forceinline__ void values(int h, float (&v)[kChunk]) const {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      if constexpr (sizeof(In) == 4) {
        v[k] = __uint_as_float(w[2 * k + h]);
      } else {
        v[k] = h ? hi_f32<In>(w[k]) : lo_f32<In>(w[k]);
      }
    }
  }
};

// Max over the kTpg adjacent lanes of a scale group (every lane of the warp takes part).
template <int kTpg, int N>
__device__ __forceinline__ void group_max(uint32_t (&m)[N], bool packed16) {
#pragma unroll
  for (int o = 1; o < kTpg; o <<= 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const uint32_t other = __shfl_xor_sync(0xffffffffu, m[i], o);
      m[i] = packed16 ? __vmaxu2(m[i], other) : max(m[i], other);
    }
  }
}

__device__ __forceinline__ int thread_index() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// The scale of a chunk whose group has the given amax. fixed_s: the scale of kFp8Tensor, kFp8Row
// (the row's or column's) and kFp8Block128x128 (the tile's), or kNvfp4's s_t (with by6 and by_st,
// the dividers of its block-scale rule).
template <class Fmt>
__device__ __forceinline__ ChunkScale chunk_scale(const TileParams& p, uint32_t amax,
                                                  float fixed_s, const Fp32Divider& by6,
                                                  const Fp32Divider& by_st) {
  constexpr QuantFormat F = Fmt::kFormat;
  const ElemInfo info = elem_info(Fmt::kElem);
  if constexpr (F == QuantFormat::kMxfp8 || F == QuantFormat::kMxfp4) {
    return {ChunkScale::kMx, 0.0f, mx_scale(amax, info, p.rceil)};
  } else if constexpr (F == QuantFormat::kNvfp4) {
    return {ChunkScale::kNvfp4, fixed_s, nvfp4_block_scale_hoisted(amax, fixed_s, by6, by_st)};
  } else if constexpr (F == QuantFormat::kFp8Block1x128) {
    return {ChunkScale::kFp32, fp32_scale(amax, info, p.pow2), 0};
  } else {
    return {ChunkScale::kFp32, fixed_s, 0};
  }
}

// Stores the scale of a group (group formats only).
template <class Fmt>
__device__ __forceinline__ void store_scale(void* scales, int64_t i, const ChunkScale& cs) {
  if constexpr (Fmt::kFormat == QuantFormat::kFp8Block1x128) {
    static_cast<float*>(scales)[i] = cs.s;
  } else if constexpr (Fmt::kBlock != 0) {
    static_cast<uint8_t*>(scales)[i] = cs.sb;
  }
}

template <class In, int TK>
struct TileShape {
  static constexpr int kRowBytes = TK * static_cast<int>(sizeof(In));
  static constexpr int kUnitsPerRow = kRowBytes / 16;               // 16-byte units per row
  static constexpr int kTileBytes = kTileR * kRowBytes;
  static constexpr int kLoads = kTileR * kUnitsPerRow / kThreads;   // 16-byte loads per thread
  static constexpr int kCpr = TK / kChunk;                          // 16-element chunks per row
  static constexpr int kUnitsPerChunk = kChunk * static_cast<int>(sizeof(In)) / 16;
  static constexpr int kRowChunks = kTileR * kCpr / kThreads;       // row chunks per thread
  static constexpr int kPairs = TK / 2;                             // column pairs
  static constexpr int kColUnits = kPairs * (kTileR / kChunk) / kThreads;  // (pair, 16 rows)
  static_assert(kTileR * kUnitsPerRow % kThreads == 0, "whole loads per thread");
  static_assert(kTileR * kCpr % kThreads == 0 && kPairs * (kTileR / kChunk) % kThreads == 0,
                "whole chunks and units per thread");
  static_assert(kThreads % kCpr == 0, "a thread's row chunks sit at one column offset");
  static_assert(kThreads % kUnitsPerRow == 0, "a thread's tile loads sit at one 16-byte unit");
  static_assert(kPairs % 4 == 0 && kTileR / kChunk == 8,
                "a warp's units are 8 row chunks x 4 column pairs (see quantize_tile_kernel)");
  static_assert(kUnitsPerRow >= 8, "the tile swizzle XORs 16-byte units with the row chunk (0..7)");
  // byte offset of 16-byte unit u of tile row rr
  static __device__ __forceinline__ int unit_at(int rr, int u) {
    return rr * kRowBytes + ((u ^ ((rr >> 4) & 7)) << 4);
  }
  // dynamic shared memory: nbuf tile buffers, then (stage_t) per warp 8 rows of 128 data_t codes,
  // and 16 bytes of slack (the staged stores read up to 16 bytes past a row)
  static constexpr int kStageBytes = 8 * kTileR;  // one warp's stage: its 8 columns
  static size_t smem_bytes(bool stage_t, int nbuf) {
    return nbuf * size_t{kTileBytes} + (stage_t ? size_t{kStageBytes} * (kThreads / 32) + 16 : 0);
  }
};

// Bytes of n codes of element type E (n even for e2m1).
template <Elem E>
__device__ __forceinline__ int64_t code_bytes(int64_t n) {
  return E == Elem::kE2M1 ? n >> 1 : n;
}

// One whole 16-code chunk at an aligned address (lean addressing).
template <Elem E>
__device__ __forceinline__ void store_full_chunk(uint8_t* dst, const uint32_t (&w)[4]) {
  if constexpr (E == Elem::kE2M1) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
  } else {
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <class In, class Fmt>
__device__ __forceinline__ void quantize_tile(const TileParams& p) {
  constexpr int TK = Fmt::kTK, kTpg = Fmt::kTpg;
  constexpr Elem E = Fmt::kElem;
  constexpr QuantFormat F = Fmt::kFormat;
  constexpr bool kFp4 = E == Elem::kE2M1, kPacked = sizeof(In) == 2;
  using S = TileShape<In, TK>;
  using R_ = Raw<In>;

  extern __shared__ __align__(128) uint8_t smem_raw[];  // nbuf x tile, then stage
  // (stage_t) this warp's [8][kTileR] stage: data_t row segments of the 8 columns it encodes
  uint8_t* const stage = smem_raw + p.nbuf * S::kTileBytes + (thread_index() >> 5) * S::kStageBytes;
  __shared__ uint32_t red[kThreads / 32];

  // The CTA's fixed tile coordinate (the column tile, or along K the row tile) and its walk.
  const bool along_k = Fmt::kWalkK && p.along_k;
  const int64_t fixed = along_k ? p.tile_row0 + blockIdx.y : int64_t{blockIdx.x};
  const int64_t t_begin =
      (along_k ? int64_t{blockIdx.x} : p.tile_row0 + blockIdx.y) * p.tiles_per_cta;
  const int64_t t_end = min(t_begin + p.tiles_per_cta, along_k ? p.col_tiles : p.row_tiles);
  // along K: the row scale bytes of the CTA's tiles, [tile row][kStageGroups], stored after it
  constexpr int kGroupsPerTile = Fmt::kBlock == 0 ? 1 : TK / Fmt::kBlock;
  constexpr int kStageGroups = kMaxTilesPerCta * kGroupsPerTile;
  __shared__ uint8_t row_scale_stage[Fmt::kWalkK ? kTileR * kStageGroups : 1];

  float fixed_s = 0.0f;  // kFp8Tensor: the scale; kNvfp4: s_t
  if constexpr (F == QuantFormat::kFp8Tensor) {
    fixed_s = fp32_scale(tensor_amax_bits(p.amax), elem_info(E), p.pow2);
  } else if constexpr (F == QuantFormat::kNvfp4) {
    fixed_s = nvfp4_tensor_scale(tensor_amax_bits(p.amax));
  }
  if (p.tensor_scale_out != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    *p.tensor_scale_out = fixed_s;
  }
  const Fp32Divider by6(6.0f), by_st(F == QuantFormat::kNvfp4 ? fixed_s : 1.0f);  // kNvfp4 only

  // Rows [r0, r0 + nrows) of row tile t (128x128: tiles never straddle two batches).
  auto tile_rows = [&](int64_t t, int64_t& r0, int& nrows) {
    if constexpr (Fmt::kBlock128) {
      const int64_t b = t / p.tiles_per_batch, i = t - b * p.tiles_per_batch;
      r0 = b * p.rows2 + i * kTileR;
      nrows = static_cast<int>(min(int64_t{kTileR}, p.rows2 - i * kTileR));
    } else {
      r0 = t * kTileR;
      nrows = static_cast<int>(min(int64_t{kTileR}, p.R - r0));
    }
  };
  // Rows [r0, r0 + nrows) and columns [c0, c0 + ncols) of the CTA's tile t.
  auto tile_at = [&](int64_t t, int64_t& r0, int& nrows, int64_t& c0, int& ncols) {
    tile_rows(along_k ? fixed : t, r0, nrows);
    c0 = (along_k ? t : fixed) * TK;
    ncols = static_cast<int>(min(int64_t{TK}, p.K - c0));
  };
  // With x's rows 16-byte aligned (vec_ok) every tile loads by 16-byte cp.async, edge tiles too:
  // a 16-byte unit lies wholly inside x or wholly outside it (K is a multiple of 16 bytes), and
  // units outside are zeroed in shared memory (zeros do not change an amax). Otherwise a tile is
  // loaded element by element after the previous one.
  auto issue = [&](int64_t t, uint8_t* buf) {  // one commit group
    const int tid = thread_index();
    int64_t r0, c0;
    int nrows, ncols;
    tile_at(t, r0, nrows, c0, ncols);
    const int units_in = ncols * static_cast<int>(sizeof(In)) / 16;  // of a row, inside x
    // The thread's unit u of rows rr0, rr0 + kRowStep, ...: one pointer stepped by a fixed byte
    // stride (a 64-bit row product per load cost ~3 instructions per element of the kernel).
    constexpr int kRowStep = kThreads / S::kUnitsPerRow;
    const int u = tid % S::kUnitsPerRow, rr0 = tid / S::kUnitsPerRow;
    const int64_t step = kRowStep * p.K * static_cast<int64_t>(sizeof(In));
    const uint8_t* src =
        static_cast<const uint8_t*>(p.x) + ((r0 + rr0) * p.K + c0) * sizeof(In) + u * 16;
    const bool col_in = u < units_in;
#pragma unroll
    for (int i = 0; i < S::kLoads; ++i) {
      const int rr = rr0 + i * kRowStep;
      if (col_in && rr < nrows) {
        cp_async16(buf + S::unit_at(rr, u), src);
      } else {
        *reinterpret_cast<uint4*>(buf + S::unit_at(rr, u)) = make_uint4(0, 0, 0, 0);
      }
      src += step;
    }
    cp_async_commit();
  };

  if (t_begin < t_end && p.vec_ok) issue(t_begin, smem_raw);
  for (int64_t t = t_begin; t < t_end; ++t) {
    // A fresh copy of the thread index per tile: values derived from it are recomputed per tile
    // instead of being hoisted out of this loop and held in registers across it.
    const int tid = thread_index();
    const int slot = static_cast<int>((t - t_begin) & 1);
    uint8_t* const tile = smem_raw + slot * S::kTileBytes;
    // the other buffer's last reader finished at the __syncthreads ending the previous tile
    const bool next = t + 1 < t_end && p.vec_ok;
    if (next) issue(t + 1, smem_raw + (slot ^ 1) * S::kTileBytes);
    int64_t r0, c0;
    int nrows, ncols;
    tile_at(t, r0, nrows, c0, ncols);
    const bool lean = Fmt::kLean && p.lean;
    if (p.vec_ok) {
      if (next) {
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
    } else {
      const R_* x = static_cast<const R_*>(p.x);
      for (int q = tid; q < kTileR * TK; q += kThreads) {
        const int rr = q / TK, cc = q % TK;
        const int unit_elems = 16 / static_cast<int>(sizeof(In));
        R_* dst = reinterpret_cast<R_*>(tile + S::unit_at(rr, cc / unit_elems)) + cc % unit_elems;
        *dst = rr < nrows && cc < ncols ? x[(r0 + rr) * p.K + c0 + cc] : R_{0};
      }
    }
    __syncthreads();

    // 0. 128x128: the tile's amax is the block's scale
    float tile_s = fixed_s;
    if constexpr (Fmt::kBlock128) {
      uint32_t m = 0;
#pragma unroll
      for (int i = 0; i < S::kTileBytes / 16 / kThreads; ++i) {
        const uint4 u = reinterpret_cast<const uint4*>(tile)[tid + i * kThreads];
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
        if constexpr (kPacked) {
          m = __vmaxu2(m, pair_abs_max(w));
        } else {
#pragma unroll
          for (int k = 0; k < 4; ++k) m = max(m, w[k] & 0x7fffffffu);
        }
      }
      if constexpr (kPacked) m = abs16_to_f32_bits<In>(max(m & 0xffffu, m >> 16));
      m = block_max_256(m, red);
      tile_s = fp32_scale(m, elem_info(E), p.pow2);
      if (tid == 0) {  // scales (row tiles, col_tiles) and scales_t (col_tiles, row tiles)
        const int64_t rt = along_k ? fixed : t, ct = along_k ? t : fixed;
        static_cast<float*>(p.scales)[rt * p.col_tiles + ct] = tile_s;
        if (p.data_t) static_cast<float*>(p.scales_t)[ct * p.row_tiles + rt] = tile_s;
      }
    }

    // 1. rows of x -> data. Thread: chunk column cq, rows rr0 + i * kThreads / kCpr.
    {
      const int cq = tid % S::kCpr, cc = cq * kChunk, rr0 = tid / S::kCpr;
      // lean: this thread's column of the tile's codes and scales
      uint8_t* const data0 = p.data + code_bytes<E>(r0 * p.K + c0 + cc);
      const int64_t scale0 = r0 * p.C + ((c0 + cc) >> Fmt::kShift);
#pragma unroll
      for (int i = 0; i < S::kRowChunks; ++i) {
        const int rr = rr0 + i * (kThreads / S::kCpr);
        RowChunk<In> x;
#pragma unroll
        for (int j = 0; j < S::kUnitsPerChunk; ++j) {
          const uint4 u = *reinterpret_cast<const uint4*>(
              tile + S::unit_at(rr, cq * S::kUnitsPerChunk + j));
          x.w[4 * j] = u.x;
          x.w[4 * j + 1] = u.y;
          x.w[4 * j + 2] = u.z;
          x.w[4 * j + 3] = u.w;
        }
        uint32_t m[1] = {0};  // group formats: the group's amax (fp32 bits)
        if constexpr (Fmt::kBlock != 0) m[0] = x.amax();
        group_max<kTpg>(m, false);  // the lanes of a group are adjacent and aligned
        if (rr >= nrows || cc >= ncols) continue;
        const int64_t r = r0 + rr;
        float s = tile_s;
        if constexpr (F == QuantFormat::kFp8Row) s = static_cast<const float*>(p.scales)[r];
        const ChunkScale cs = chunk_scale<Fmt>(p, m[0], s, by6, by_st);
        if constexpr (Fmt::kBlock != 0) {
          if ((cq & (kTpg - 1)) == 0) {
            if (along_k) {
              row_scale_stage[rr * kStageGroups + (t - t_begin) * kGroupsPerTile +
                              (cc >> Fmt::kShift)] = cs.sb;
            } else if (lean) {
              store_scale<Fmt>(p.scales, scale0 + uint64_t{static_cast<uint32_t>(rr)} * p.C32, cs);
            } else {
              store_scale<Fmt>(p.scales,
                               group_scale_offset(p.swizzle, p.C, r, (c0 + cc) >> Fmt::kShift), cs);
            }
          }
        }
        uint32_t w[4];
        encode_row_chunk<In, E>(x, cs, w);
        if (lean) {  // K is a multiple of 16: a chunk inside x is whole
          store_full_chunk<E>(data0 + uint64_t{static_cast<uint32_t>(rr)} * p.ld_codes, w);
        } else {
          store_chunk<E>(p.data, r * p.K + c0 + cc, min(ncols - cc, kChunk), w);
        }
      }
    }

    // 2. columns of x -> rows of data_t. Thread: row chunk ch = tid % 8 (rows 16 ch .. 16 ch + 15),
    // column pairs cp0 + 32 i: a warp's 32 lanes cover the 8 columns 8 w + 64 i .. + 7.
    if (p.data_t) {
      const int ch = tid & 7, cp0 = tid >> 3;
      const int nr = min(nrows - ch * kChunk, kChunk);  // rows of this chunk inside x
      // lean: the tile's data_t codes and scales_t at this thread's rows (column 0 of the tile)
      uint8_t* const data_t0 = p.data_t + code_bytes<E>(c0 * p.ld_t + r0 + ch * kChunk);
      const int64_t scale_t0 = c0 * p.Ct + ((r0 + ch * kChunk) >> Fmt::kShift);
      const bool lean_t = lean && nr == kChunk;
#pragma unroll
      for (int i = 0; i < S::kColUnits; ++i) {
        const int cp = cp0 + i * (kThreads / 8);
        // byte offset of the pair in row 16 ch (its unit is swizzled with ch for all 16 rows)
        constexpr int kPairBytes = 2 * sizeof(In);
        const int b0 = ch * kChunk * S::kRowBytes +
                       ((((cp * kPairBytes) >> 4) ^ ch) << 4) + ((cp * kPairBytes) & 15);
        ColPair<In> x;
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          if constexpr (kPacked) {
            x.w[k] = *reinterpret_cast<const uint32_t*>(tile + b0 + k * S::kRowBytes);
          } else {
            const uint2 u = *reinterpret_cast<const uint2*>(tile + b0 + k * S::kRowBytes);
            x.w[2 * k] = u.x;
            x.w[2 * k + 1] = u.y;
          }
        }
        uint32_t m[ColPair<In>::kPer] = {};
        if constexpr (Fmt::kBlock != 0) x.maxima(m);
        group_max<kTpg>(m, kPacked);  // a group's chunks are in adjacent lanes (ch)
        if (nr > 0) {
          const int64_t r = r0 + ch * kChunk;
          ChunkScale cs[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int cc = 2 * cp + h;
            const int64_t k = c0 + cc;
            float s = tile_s;
            if constexpr (F == QuantFormat::kFp8Row) {
              if (cc < ncols) s = static_cast<const float*>(p.scales_t)[k];
            }
            cs[h] = chunk_scale<Fmt>(p, ColPair<In>::amax(m, h), s, by6, by_st);
            if constexpr (Fmt::kBlock != 0) {
              if ((ch & (kTpg - 1)) == 0 && cc < ncols) {
                if (lean) {
                  store_scale<Fmt>(p.scales_t,
                                   scale_t0 + uint64_t{static_cast<uint32_t>(cc)} * p.Ct32, cs[h]);
                } else {
                  store_scale<Fmt>(p.scales_t,
                                   group_scale_offset(p.swizzle, p.Ct, k, r >> Fmt::kShift), cs[h]);
                }
              }
            }
          }
          // MXFP4 and NVFP4 of 16-bit inputs: both columns at once on the lanes of the row
          // words (Mx4Packed, Nvfp4Packed), when both scales allow it.
          uint32_t packed[2][2] = {};
          bool both = false;
          if constexpr (F == QuantFormat::kMxfp4 && kPacked) {
            both = Mx4Packed<In>::usable(cs[0].sb) && Mx4Packed<In>::usable(cs[1].sb);
            if (both) encode_e2m1_col_pair(Mx4Packed<In>(cs[0].sb, cs[1].sb), x.w, packed);
          } else if constexpr (F == QuantFormat::kNvfp4 && kPacked) {
            const float s0 = Nvfp4Packed<In>::divisor(cs[0]), s1 = Nvfp4Packed<In>::divisor(cs[1]);
            both = nvfp4_compare_usable(s0) && nvfp4_compare_usable(s1);  // NaN scales fail
            if (both) encode_e2m1_col_pair(Nvfp4Packed<In>(s0, s1), x.w, packed);
          }
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int cc = 2 * cp + h;
            if (cc >= ncols) continue;
            const int64_t k = c0 + cc;
            uint32_t w[4] = {packed[h][0], packed[h][1], 0, 0};
            if (!both) {
              float v[kChunk];
              x.values(h, v);
              encode_chunk<E>(v, cs[h], w);
            }
            if (!kFp4 && p.stage_t) {  // local column 2 (cp % 4) + h of this warp's stage
              *reinterpret_cast<uint4*>(stage + (2 * (cp & 3) + h) * kTileR + ch * kChunk) =
                  make_uint4(w[0], w[1], w[2], w[3]);
            } else if (lean_t) {
              store_full_chunk<E>(data_t0 + uint64_t{static_cast<uint32_t>(cc)} * p.ld_codes_t, w);
            } else {
              store_chunk<E>(p.data_t, k * p.ld_t + r, nr, w);
            }
          }
        }
        if (!kFp4 && p.stage_t) {  // the warp's 8 data_t row segments, 16 bytes per lane
          __syncwarp();
          const int k = tid & 7;  // 8 lanes per column: up to 16 bytes each
#pragma unroll
          for (int pass = 0; pass < 2; ++pass) {
            const int lc = ((tid >> 3) & 3) + 4 * pass;  // local column
            const int cc = 8 * (tid >> 5) + 64 * i + lc;
            if (cc >= ncols) continue;
            uint8_t* dst = p.data_t + (c0 + cc) * p.ld_t + r0;
            const uint8_t* src = stage + lc * kTileR;
            // bytes up to dst's first 16-byte boundary, whole 16-byte units, then the rest
            const int head = min(
                static_cast<int>((16u - (reinterpret_cast<uintptr_t>(dst) & 15u)) & 15u), nrows);
            const int units = (nrows - head) >> 4, tail0 = head + 16 * units;
            if (k < units) {  // src bytes head + 16 k .. + 15: five words, shifted by head % 4
              const uint32_t* s32 =
                  reinterpret_cast<const uint32_t*>(src) + ((head + 16 * k) >> 2);
              const uint32_t sh = 8 * (head & 3);
              uint32_t w[5];
#pragma unroll
              for (int j = 0; j < 5; ++j) w[j] = s32[j];
              *reinterpret_cast<uint4*>(dst + head + 16 * k) =
                  make_uint4(__funnelshift_r(w[0], w[1], sh), __funnelshift_r(w[1], w[2], sh),
                             __funnelshift_r(w[2], w[3], sh), __funnelshift_r(w[3], w[4], sh));
            }
#pragma unroll
            for (int b = k; b < 16; b += 8) {
              if (b < head) dst[b] = src[b];
              if (tail0 + b < nrows) dst[tail0 + b] = src[tail0 + b];
            }
          }
          __syncwarp();  // the stage is read before the next round writes it
        }
      }
    }
    __syncthreads();  // the tile buffer and stage are free again
  }

  // Along K: the row scale bytes of the walk (made visible by the loop's last __syncthreads),
  // entry q = (row rr, group gi of the walk) to thread q % kThreads, so that adjacent lanes store
  // adjacent bytes of a row.
  if constexpr (Fmt::kWalkK) {
    if (along_k && t_begin < t_end) {
      int64_t r0;
      int nrows;
      tile_rows(fixed, r0, nrows);
      const int64_t c_begin = t_begin * TK, c_end = min(t_end * TK, p.K);
      const int ng = static_cast<int>((c_end - c_begin + Fmt::kBlock - 1) >> Fmt::kShift);
      const int64_t g0 = c_begin >> Fmt::kShift;
      for (int q = thread_index(); q < nrows * ng; q += kThreads) {
        const int rr = q / ng, gi = q - rr * ng;
        static_cast<uint8_t*>(p.scales)[group_scale_offset(p.swizzle, p.C, r0 + rr, g0 + gi)] =
            row_scale_stage[rr * kStageGroups + gi];
      }
    }
  }
}

// The kernels around quantize_tile. Four CTAs per SM (at most 64 registers) for 16-bit inputs,
// where the encoders fit: left to itself the compiler took 66 for bf16 MXFP4 (three CTAs). NVFP4
// (68) and f32 inputs keep the plain bound: a minimum of 3 made the compiler take 80 registers
// and spill in NVFP4.
template <class In, class Fmt>
constexpr bool kTileFour = sizeof(In) == 2 && Fmt::kFormat != QuantFormat::kNvfp4;

template <class In, class Fmt>
__global__ void __launch_bounds__(kThreads, 4) quantize_tile_kernel4(const TileParams p) {
  quantize_tile<In, Fmt>(p);
}
template <class In, class Fmt>
__global__ void __launch_bounds__(kThreads) quantize_tile_kernel(const TileParams p) {
  quantize_tile<In, Fmt>(p);
}

// Row and column amaxes of x (R, K) in one read, for kFp8Row with the transposed copy: a CTA
// covers 64 rows x (32 * kVec) columns (warp w: rows w, w + 8, ...; lane: kVec columns), reduces
// them and merges its partial maxima into row_amax / col_amax with atomicMax (the bits of a
// non-negative float order like the float, NaN above Inf). CTA rows run bottom-up (the last
// blockIdx.y takes rows 0..63), the reverse of the tile kernel's order, so that the rows this
// pass reads last, still in L2, are the ones the tile kernel reads first; rows from keep_rows on
// load as L2 evict-first.
template <class In>
__global__ void __launch_bounds__(kThreads) rowcol_amax_kernel(const In* x, int64_t R, int64_t K,
                                                               bool vec_ok, int64_t keep_rows,
                                                               uint32_t* row_amax,
                                                               uint32_t* col_amax) {
  constexpr int kVec = 16 / sizeof(In), kRows = 64, kCols = 32 * kVec;
  __shared__ uint32_t part[kThreads / 32][kCols];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t r0 = int64_t{gridDim.y - 1 - blockIdx.y} * kRows;
  const int64_t c = int64_t{blockIdx.x} * kCols + lane * kVec;
  const bool vec = vec_ok && c + kVec <= K;
  const uint64_t policy = l2_policy(r0 >= keep_rows);
  uint32_t cm[kVec] = {};
  uint4 u[kRows / 8];  // raw 16-byte rows (decoded when reduced: half the registers of floats)
#pragma unroll
  for (int i = 0; i < kRows / 8; ++i) {  // all loads first: 8 x 16 bytes in flight per thread
    const int64_t r = r0 + warp + 8 * i;
    if (vec && r < R) {
      u[i] = ldg16(reinterpret_cast<const uint4*>(x + r * K + c), policy);
    } else {  // edge: element loads of the raw bits, zero outside x
      uint32_t w[4] = {0, 0, 0, 0};
      const Raw<In>* xr = reinterpret_cast<const Raw<In>*>(x);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const uint32_t b = r < R && c + k < K ? uint32_t{xr[r * K + c + k]} : 0u;
        w[k * sizeof(In) / 4] |= b << (8 * ((k * sizeof(In)) % 4));
      }
      u[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
#pragma unroll
  for (int i = 0; i < kRows / 8; ++i) {
    uint32_t m = 0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const uint32_t a = abs_bits(vec_elem<In>(u[i], k));
      m = max(m, a);
      cm[k] = max(cm[k], a);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int64_t r = r0 + warp + 8 * i;
    if (lane == 0 && m != 0 && r < R) atomicMax(row_amax + r, m);
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) part[warp][lane * kVec + k] = cm[k];
  __syncthreads();
  for (int j = threadIdx.x; j < kCols; j += kThreads) {
    uint32_t m = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) m = max(m, part[w][j]);
    const int64_t col = int64_t{blockIdx.x} * kCols + j;
    if (m != 0 && col < K) atomicMax(col_amax + col, m);
  }
}

__global__ void finalize_row_scales(float* s, int64_t n, Elem e, bool pow2) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) s[i] = fp32_scale(fbits(s[i]), elem_info(e), pow2);
}

template <class T>
struct Tag {
  using type = T;
};

template <class Fn>
void with_input(DType in, Fn&& fn) {
  switch (in) {
    case DType::kF32: fn(Tag<float>{}); break;
    case DType::kF16: fn(Tag<__half>{}); break;
    default: fn(Tag<__nv_bfloat16>{}); break;
  }
}

template <class In, class Fmt>
Status launch_tile(const TileParams& base, cudaStream_t stream) {
  const size_t smem = TileShape<In, Fmt::kTK>::smem_bytes(base.stage_t, base.nbuf);
  void (*kernel)(const TileParams);
  if constexpr (kTileFour<In, Fmt>) {
    kernel = quantize_tile_kernel4<In, Fmt>;
  } else {
    kernel = quantize_tile_kernel<In, Fmt>;
  }
  if (smem > 48 * 1024) {
    DW_CUDA_TRY("quantize", cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem)));
  }
  TileParams p = base;
  const int64_t walks = ((p.along_k ? p.col_tiles : p.row_tiles) + p.tiles_per_cta - 1) /
                        p.tiles_per_cta;  // CTAs per fixed coordinate
  // grid (x, y): rows walk (col_tiles, walks), along_k (walks, row_tiles), y in 65535 pieces
  const unsigned gx = static_cast<unsigned>(p.along_k ? walks : p.col_tiles);
  const int64_t cta_rows = p.along_k ? p.row_tiles : walks;
  for (p.tile_row0 = 0; p.tile_row0 < cta_rows; p.tile_row0 += 65535) {
    const unsigned rows = static_cast<unsigned>(std::min<int64_t>(65535, cta_rows - p.tile_row0));
    kernel<<<dim3(gx, rows), kThreads, smem, stream>>>(p);
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

// The compiled instances: every (format, element type) with a tile path, per input type.
template <class In, QuantFormat F>
Status launch_fp8(Elem e, const TileParams& c, cudaStream_t stream) {
  return e == Elem::kE5M2 ? launch_tile<In, TileFormat<F, Elem::kE5M2>>(c, stream)
                          : launch_tile<In, TileFormat<F, Elem::kE4M3>>(c, stream);
}

template <class In>
Status launch_tiles(const Problem& p, const TileParams& c, cudaStream_t stream) {
  switch (p.format) {
    case QuantFormat::kFp8Tensor: return launch_fp8<In, QuantFormat::kFp8Tensor>(p.elem, c, stream);
    case QuantFormat::kFp8Row: return launch_fp8<In, QuantFormat::kFp8Row>(p.elem, c, stream);
    case QuantFormat::kFp8Block1x128:
      return launch_fp8<In, QuantFormat::kFp8Block1x128>(p.elem, c, stream);
    case QuantFormat::kFp8Block128x128:
      return launch_fp8<In, QuantFormat::kFp8Block128x128>(p.elem, c, stream);
    case QuantFormat::kMxfp8: return launch_fp8<In, QuantFormat::kMxfp8>(p.elem, c, stream);
    case QuantFormat::kMxfp4:
      return launch_tile<In, TileFormat<QuantFormat::kMxfp4, Elem::kE2M1>>(c, stream);
    case QuantFormat::kNvfp4:
      return launch_tile<In, TileFormat<QuantFormat::kNvfp4, Elem::kE2M1>>(c, stream);
  }
  return Status(StatusCode::kInternal, "quantize: no tile kernel for this format");
}

// Parameters of a tile launch over p.main (and p.transposed when requested); rows2 = rows per
// batch of kFp8Block128x128, x.rows otherwise.
TileParams tile_params(const Problem& p, const uint32_t* amax, int sm_count) {
  TileParams c{};
  c.x = p.main.x.data;
  c.R = p.main.x.rows;
  c.K = p.main.x.cols;
  c.rows2 = p.format == QuantFormat::kFp8Block128x128 ? p.main.rows2 : c.R;
  c.tiles_per_batch = (c.rows2 + kTileR - 1) / kTileR;
  c.row_tiles = c.rows2 == 0 ? 0 : (c.R / c.rows2) * c.tiles_per_batch;
  c.data = p.main.data;
  c.scales = p.main.scales;
  if (p.has_transposed) {
    c.data_t = p.transposed.data;
    c.ld_t = p.transposed.ld;
    c.scales_t = p.transposed.scales;
  }
  c.amax = amax;
  c.rceil = p.rule == ScaleRule::kRceil;
  c.pow2 = p.pow2;
  c.swizzle = p.swizzle;
  const int block = p.traits.block == 0 ? kChunk : p.traits.block;
  c.C = (c.K + block - 1) / block;
  c.Ct = (c.R + block - 1) / block;
  const int in_size = p.main.x.dtype == DType::kF32 ? 4 : 2;
  c.vec_ok = (reinterpret_cast<uintptr_t>(c.x) & 15u) == 0 && (c.K * in_size) % 16 == 0;
  c.stage_t = c.data_t && !p.traits.fp4 &&
              ((reinterpret_cast<uintptr_t>(c.data_t) & 15u) != 0 || c.ld_t % 16 != 0);
  // About four waves of CTAs at 4 CTAs per SM, each walking 1..4 tiles (double-buffered), for
  // 64-column tiles; one tile per CTA for 128-column ones (session 59: mxfp8 +T 16384x8192 0.778
  // -> 0.812 against three, mxfp4 0.628 -> 0.651; 1x128 within 0.5 %, as 128x128 in session 57).
  const int tk = tile_cols(p.format);  // TileFormat::kTK
  c.col_tiles = (c.K + tk - 1) / tk;
  const int64_t tiles = c.row_tiles * c.col_tiles;
  c.tiles_per_cta =
      tk == 128 ? 1 : std::clamp<int64_t>(tiles / (int64_t{sm_count} * 16), 1, kMaxTilesPerCta);
  c.nbuf = c.tiles_per_cta > 1 ? 2 : 1;  // a second buffer only pays when there is a next tile
  c.along_k = walks_along_k(p.format) && c.col_tiles >= c.tiles_per_cta;
  // lean addressing (TileParams::lean)
  const int code_align = p.traits.fp4 ? 8 : 16;
  const auto aligned = [&](const void* q) {
    return reinterpret_cast<uintptr_t>(q) % code_align == 0;
  };
  const int64_t ld_codes = p.traits.fp4 ? c.K / 2 : c.K;
  const int64_t ld_codes_t = p.traits.fp4 ? c.ld_t / 2 : c.ld_t;
  constexpr int64_t k32 = int64_t{1} << 31;
  c.lean = !c.swizzle && c.K % kChunk == 0 && aligned(c.data) && ld_codes < k32 && c.C < k32 &&
           (c.data_t == nullptr ||
            (!c.stage_t && c.ld_t % kChunk == 0 && aligned(c.data_t) && ld_codes_t < k32 &&
             c.Ct < k32));
  c.ld_codes = static_cast<uint32_t>(ld_codes);
  c.ld_codes_t = static_cast<uint32_t>(ld_codes_t);
  c.C32 = static_cast<uint32_t>(c.C);
  c.Ct32 = static_cast<uint32_t>(c.Ct);
  return c;
}

Status run_tiles(const Problem& p, const TileParams& c, cudaStream_t stream) {
  if (c.row_tiles == 0 || c.K == 0) return Status::Ok();
  switch (p.main.x.dtype) {
    case DType::kF32: return launch_tiles<float>(p, c, stream);
    case DType::kF16: return launch_tiles<__half>(p, c, stream);
    default: return launch_tiles<__nv_bfloat16>(p, c, stream);
  }
}

}  // namespace

Status launch_block128(const Problem& p, int sm_count, cudaStream_t stream) {
  return run_tiles(p, tile_params(p, nullptr, sm_count), stream);
}

Status launch_transposed(const Problem& p, const uint32_t* amax, float* tensor_scale_out,
                         const detail::DeviceInfo& dev, cudaStream_t stream) {
  TileParams c = tile_params(p, amax, dev.sm_count);
  c.tensor_scale_out = tensor_scale_out;
  if (c.R == 0 || c.K == 0) {
    // Empty codes; kFp8Row still owes its (all-minimum) scales.
    if (p.format == QuantFormat::kFp8Row) {
      if (c.R) {
        DW_CUDA_TRY("quantize", cudaMemsetAsync(c.scales, 0, c.R * sizeof(float), stream));
        finalize_row_scales<<<grid_for(c.R), 256, 0, stream>>>(static_cast<float*>(c.scales), c.R,
                                                               p.elem, p.pow2);
      }
      if (c.K) {
        DW_CUDA_TRY("quantize", cudaMemsetAsync(c.scales_t, 0, c.K * sizeof(float), stream));
        finalize_row_scales<<<grid_for(c.K), 256, 0, stream>>>(static_cast<float*>(c.scales_t),
                                                               c.K, p.elem, p.pow2);
      }
      return detail::last_launch_status("quantize");
    }
    return Status::Ok();
  }
  if (p.format == QuantFormat::kFp8Row) {  // row and column amaxes, then their scales
    auto* row_amax = static_cast<uint32_t*>(c.scales);
    auto* col_amax = static_cast<uint32_t*>(c.scales_t);
    DW_CUDA_TRY("quantize", cudaMemsetAsync(row_amax, 0, c.R * sizeof(float), stream));
    DW_CUDA_TRY("quantize", cudaMemsetAsync(col_amax, 0, c.K * sizeof(float), stream));
    const int64_t row_blocks = (c.R + 63) / 64;
    if (row_blocks > 65535) {
      return Status(StatusCode::kNotSupported,
                    "quantize: fp8_row with the transposed copy of more than 4194240 rows on CUDA");
    }
    with_input(p.main.x.dtype, [&](auto in) {
      using In = typename decltype(in)::type;
      constexpr int kCols = 32 * (16 / sizeof(In));
      const dim3 grid(static_cast<unsigned>((c.K + kCols - 1) / kCols),
                      static_cast<unsigned>(row_blocks));
      const int64_t keep_rows = l2_keep_bytes(dev) / (c.K * int64_t{sizeof(In)});
      rowcol_amax_kernel<In><<<grid, kThreads, 0, stream>>>(static_cast<const In*>(c.x), c.R, c.K,
                                                            c.vec_ok, keep_rows, row_amax,
                                                            col_amax);
    });
    finalize_row_scales<<<grid_for(c.R), 256, 0, stream>>>(static_cast<float*>(c.scales), c.R,
                                                           p.elem, p.pow2);
    finalize_row_scales<<<grid_for(c.K), 256, 0, stream>>>(static_cast<float*>(c.scales_t), c.K,
                                                           p.elem, p.pow2);
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return run_tiles(p, c, stream);
}

}  // namespace deepwell::quant
