// CUDA kernels for quantize() calls with the transposed copy, and for 128x128 blocks (sm_90a):
// data = quantize(x) and data_t = quantize(x^T) of a 2-D, contiguous x (R, K), both from ONE read
// of x; kFp8Block128x128 (any batch, with or without data_t) goes through the same kernel.
//
// quantize_tile_kernel: a 256-thread CTA walks `tiles_per_cta` tiles of 128 rows x TK columns
// (TK = 128 for the 128-long groups of kFp8Block1x128 / kFp8Block128x128, 64 otherwise) down one
// column strip of x, double-buffered: the 16-byte cp.async loads of tile t+1 are in flight while
// tile t is encoded (edge and unaligned tiles are loaded with plain element loads, zero-filled:
// zeros do not change an amax). Per tile:
//  0. kFp8Block128x128: the tile's amax (block reduce) is the block's scale.
//  1. rows: each thread encodes 16-element chunks of tile rows (group amax over block/16 adjacent
//     lanes with shuffles, as quantize_groups_kernel) and stores them to data.
//  2. columns (when data_t is requested): a unit is (column pair, 16 rows); the 32 lanes of a
//     warp take the 8 row chunks (16 rows each) of 4 adjacent column pairs, so that their 16-byte
//     code stores (fp4: 8-byte) cover whole 128-byte (fp4: 64-byte) segments of 4 data_t rows:
//     full sectors and lines instead of 32 rows x 16 bytes per store instruction, which loaded L2
//     with partial-sector writes (ncu, H100: L2 at 77 % of peak, DRAM at 44 %, mxfp8 +T). The
//     tile sits in shared memory XOR-swizzled in 16-byte units by row chunk, so those 8 rows of a
//     unit fall in 8 different bank groups (no conflicts). For group scales, pass 1 writes the
//     amax of every (column, 16 rows) to shared memory and pass 2 combines block/16 of them. The
//     16 codes of a unit go to a data_t row with one 16-byte store (fp4: 8), or, when the rows of
//     data_t are not 16-byte aligned (R % 16 != 0), through shared memory, written out by whole
//     warps along each data_t row (32 consecutive bytes per store instruction, instead of 16
//     single-byte stores per lane, each to a different row).
// Scales and codes come from codec.hpp through encode_chunk, exactly as the row kernels.
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
  uint8_t* data_t;  // (K, R) codes, or null (no transposed copy)
  void* scales_t;   // its scales (kFp8Row: the finished per-column scales of x)
  const uint32_t* amax;  // tensor amax bits (kFp8Tensor, kNvfp4)
  QuantFormat format;
  bool rceil, pow2, swizzle;
  bool vec_ok;      // x and its rows are 16-byte aligned: 16-byte loads on full tiles
  bool stage_t;     // data_t rows are not 16-byte aligned: stage its codes in shared memory
  int block;        // scale group (16, 32, 128) in both directions; 16 for kFp8Tensor / kFp8Row
  int block_shift;  // log2(block)
  int64_t C, Ct;    // scale columns of data (per row of x) and of data_t (per column of x)
  int64_t tile_row0;  // first CTA row of this launch (gridDim.y is at most 65535)
};

// Raw storage of an input element in shared memory, and its exact fp32 value.
template <class In>
using Raw = std::conditional_t<sizeof(In) == 4, uint32_t, uint16_t>;

template <class In>
__device__ __forceinline__ float raw_to_f32(uint32_t r) {
  if constexpr (sizeof(In) == 4) {
    return __uint_as_float(r);
  } else if constexpr (std::is_same_v<In, __half>) {
    return __half2float(__ushort_as_half(static_cast<uint16_t>(r)));
  } else {
    return __uint_as_float(r << 16);  // bf16 -> f32 is exact
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

// The scale of one chunk of a group with the given amax; the group's first chunk (writer) stores
// it at scales[si]. fixed_s: the scale of kFp8Tensor, kFp8Row (the row's or column's) and
// kFp8Block128x128 (the tile's), or kNvfp4's s_t.
template <Elem E>
__device__ __forceinline__ ChunkScale chunk_scale(const TileParams& p, uint32_t amax, float fixed_s,
                                                  bool writer, void* scales, int64_t si) {
  const ElemInfo info = elem_info(E);
  ChunkScale cs{ChunkScale::kFp32, fixed_s, 0};
  switch (p.format) {
    case QuantFormat::kFp8Tensor:
    case QuantFormat::kFp8Row:
    case QuantFormat::kFp8Block128x128:
      break;
    case QuantFormat::kFp8Block1x128:
      cs.s = fp32_scale(amax, info, p.pow2);
      if (writer) static_cast<float*>(scales)[si] = cs.s;
      break;
    case QuantFormat::kNvfp4:
      cs = {ChunkScale::kNvfp4, fixed_s, nvfp4_block_scale(amax, fixed_s)};
      if (writer) static_cast<uint8_t*>(scales)[si] = cs.sb;
      break;
    default:  // MX
      cs = {ChunkScale::kMx, 0.0f, mx_scale(amax, info, p.rceil)};
      if (writer) static_cast<uint8_t*>(scales)[si] = cs.sb;
      break;
  }
  return cs;
}

template <class In, int TK>
struct TileShape {
  using R_ = Raw<In>;
  static constexpr int kVec = 16 / sizeof(In);  // elements per 16-byte access
  static constexpr int kVecPerRow = TK / kVec;
  static constexpr int kLoads = kTileR * kVecPerRow / kThreads;  // 16-byte loads per thread
  static constexpr int kCpr = TK / kChunk;                       // 16-element chunks per row
  static constexpr int kRowChunks = kTileR * kCpr / kThreads;
  static constexpr int kPairs = TK / 2;                          // column pairs
  static constexpr int kUnits = kPairs * (kTileR / kChunk) / kThreads;  // (pair, 16 rows)
  static constexpr int kTileElems = kTileR * TK;
  static_assert(kTileR * kVecPerRow % kThreads == 0, "whole loads per thread");
  static_assert(kTileR * kCpr % kThreads == 0 && kPairs * (kTileR / kChunk) % kThreads == 0,
                "whole chunks and units per thread");
  static_assert(kPairs % 4 == 0 && kTileR / kChunk == 8,
                "a warp's units are 8 row chunks x 4 column pairs (see quantize_tile_kernel)");
  static_assert(kVecPerRow >= 8, "the tile swizzle XORs 16-byte units with the row chunk (0..7)");
  // dynamic shared memory: two tile buffers, then (stage_t) TK rows of 128 data_t codes
  static size_t smem_bytes(bool stage_t) {
    return 2 * size_t{kTileElems} * sizeof(In) + (stage_t ? size_t{TK} * kTileR : 0);
  }
};

template <class In, Elem E, int TK>
__global__ void __launch_bounds__(kThreads) quantize_tile_kernel(const TileParams p) {
  static_assert(TK == 64 || TK == 128, "tile width: 64, or 128 for the 128-long groups");
  static_assert(E != Elem::kE2M1 || TK == 64, "fp4 formats have groups of 16 or 32");
  using S = TileShape<In, TK>;
  using R_ = typename S::R_;
  constexpr int kVec = S::kVec, kCpr = S::kCpr;

  extern __shared__ __align__(16) uint8_t smem_raw[];
  R_* const bufs = reinterpret_cast<R_*>(smem_raw);  // 2 x [kTileR][TK]
  uint8_t* const stage = smem_raw + 2 * sizeof(R_) * S::kTileElems;  // [TK][kTileR] (stage_t)
  __shared__ uint32_t col_amax[kTileR / kChunk * TK];
  __shared__ uint32_t red[kThreads / 32];

  // Tile layout in shared memory: row-major [kTileR][TK] in 16-byte units, unit u of row rr stored
  // at unit u ^ (rr / 16): the column pass reads, per warp, one 16-byte unit of 8 rows 16 apart
  // (see 2.), which this spreads over all 32 banks; the row pass and cp.async move whole units.
  auto at = [](int rr, int col) {
    return rr * TK + ((((col / kVec) ^ ((rr >> 4) & 7)) * kVec) | (col % kVec));
  };
  // col_amax[ch][col] at ch * TK + (col ^ f(ch)), f(ch) flipping bits 0, 3, 4: the 32 lanes of a
  // warp (8 ch x 4 column pairs, one h) then write 32 different banks.
  auto ca = [](int ch, int col) { return ch * TK + (col ^ ((ch & 1) | ((ch >> 1) << 3))); };
  const int64_t c0 = int64_t{blockIdx.x} * TK;
  const int64_t t_begin = (p.tile_row0 + blockIdx.y) * p.tiles_per_cta;
  const int64_t t_end = min(t_begin + p.tiles_per_cta, p.row_tiles);
  const R_* x = static_cast<const R_*>(p.x);
  const bool block128 = p.format == QuantFormat::kFp8Block128x128;
  const bool group_t = p.format != QuantFormat::kFp8Tensor && p.format != QuantFormat::kFp8Row &&
                       !block128;  // columns have group scales (their amax pass is needed)

  float fixed_s = 0.0f;  // kFp8Tensor: the scale; kNvfp4: s_t
  if (p.format == QuantFormat::kFp8Tensor) {
    fixed_s = fp32_scale(tensor_amax_bits(p.amax), elem_info(E), p.pow2);
  }
  if (p.format == QuantFormat::kNvfp4) fixed_s = nvfp4_tensor_scale(tensor_amax_bits(p.amax));
  const int tpg = p.block / kChunk;  // chunks per scale group: 1, 2 or 8

  // Rows [r0, r_end) of row tile t.
  auto tile_rows = [&](int64_t t, int64_t& r0, int64_t& r_end) {
    const int64_t b = t / p.tiles_per_batch, i = t - b * p.tiles_per_batch;
    r0 = b * p.rows2 + i * kTileR;
    r_end = b * p.rows2 + min(p.rows2, (i + 1) * kTileR);
  };
  auto full = [&](int64_t t) {
    int64_t r0, r_end;
    tile_rows(t, r0, r_end);
    return p.vec_ok && r_end - r0 == kTileR && c0 + TK <= p.K;
  };
  auto issue = [&](int64_t t, R_* buf) {  // cp.async of a full tile, one commit group
    const int tid = thread_index();
    int64_t r0, r_end;
    tile_rows(t, r0, r_end);
#pragma unroll
    for (int i = 0; i < S::kLoads; ++i) {
      const int q = tid + i * kThreads, rr = q / S::kVecPerRow,
                cc = (q % S::kVecPerRow) * kVec;
      cp_async16(buf + at(rr, cc), x + (r0 + rr) * p.K + c0 + cc);
    }
    cp_async_commit();
  };

  if (t_begin < t_end && full(t_begin)) issue(t_begin, bufs);
  for (int64_t t = t_begin; t < t_end; ++t) {
    // A fresh copy of the thread index per tile: values derived from it are recomputed per tile
    // instead of being hoisted out of this loop and held in registers across it (that doubled
    // the register count and spilled).
    const int tid = thread_index();
    const int slot = static_cast<int>((t - t_begin) & 1);
    R_* const tile = bufs + slot * S::kTileElems;
    // the other buffer's last reader finished at the __syncthreads ending the previous tile
    const bool next = t + 1 < t_end && full(t + 1);
    if (next) issue(t + 1, bufs + (slot ^ 1) * S::kTileElems);
    int64_t r0, r_end;
    tile_rows(t, r0, r_end);
    if (full(t)) {
      if (next) {
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
    } else {
      for (int q = tid; q < S::kTileElems; q += kThreads) {
        const int rr = q / TK, cc = q % TK;
        const int64_t r = r0 + rr, c = c0 + cc;
        tile[at(rr, cc)] = r < r_end && c < p.K ? x[r * p.K + c] : R_{0};
      }
    }
    __syncthreads();

    // 0. 128x128: the tile's amax is the block's scale
    float tile_s = fixed_s;
    if (block128) {
      uint32_t m = 0;
      for (int q = tid; q < S::kTileElems / kVec; q += kThreads) {
        const uint4 u = reinterpret_cast<const uint4*>(tile)[q];
#pragma unroll
        for (int k = 0; k < kVec; ++k) m = max(m, abs_bits(vec_elem<In>(u, k)));
      }
      m = block_max_256(m, red);
      tile_s = fp32_scale(m, elem_info(E), p.pow2);
      if (tid == 0) {
        const int64_t b = t / p.tiles_per_batch, i = t - b * p.tiles_per_batch;
        static_cast<float*>(p.scales)[(b * p.tiles_per_batch + i) * gridDim.x + blockIdx.x] = tile_s;
        if (p.data_t) static_cast<float*>(p.scales_t)[int64_t{blockIdx.x} * p.row_tiles + t] = tile_s;
      }
    }

    // 1. rows of x -> data
#pragma unroll 1
    for (int i = 0; i < S::kRowChunks; ++i) {
      const int q = tid + i * kThreads, rr = q / kCpr, cc = (q % kCpr) * kChunk;
      const int64_t r = r0 + rr, c = c0 + cc;
      float v[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk / kVec; ++j) {
        const uint4 u = *reinterpret_cast<const uint4*>(tile + at(rr, cc + j * kVec));
#pragma unroll
        for (int k = 0; k < kVec; ++k) v[j * kVec + k] = vec_elem<In>(u, k);
      }
      uint32_t amax = chunk_amax(v);
      // the lanes of a group are adjacent and aligned (kCpr is a multiple of tpg)
      for (int o = 1; o < tpg; o <<= 1) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      if (r >= r_end || c >= p.K) continue;
      const float s = p.format == QuantFormat::kFp8Row ? static_cast<const float*>(p.scales)[r]
                                                       : tile_s;
      const ChunkScale cs =
          chunk_scale<E>(p, amax, s, ((cc / kChunk) & (tpg - 1)) == 0, p.scales,
                         group_scale_offset(p.swizzle, p.C, r, c >> p.block_shift));
      uint32_t w[4];
      encode_chunk<E>(v, cs, w);
      store_chunk<E>(p.data, r * p.K + c, static_cast<int>(std::min<int64_t>(p.K - c, kChunk)), w);
    }

    // 2. columns of x -> rows of data_t
    if (p.data_t) {
      // The 16 rows of column pair cp in chunk ch: one 4-byte (f32: 8-byte) shared load per row,
      // kept packed (column h of row k: element h of pr[k]) to halve the registers.
      using Pair = std::conditional_t<sizeof(In) == 4, uint2, uint32_t>;
      auto load_pair = [&](int ch, int cp, Pair (&pr)[kChunk]) {
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          pr[k] = *reinterpret_cast<const Pair*>(tile + at(ch * kChunk + k, 2 * cp));
        }
      };
      auto column = [&](const Pair (&pr)[kChunk], int h, float (&v)[kChunk]) {
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          if constexpr (sizeof(In) == 4) {
            v[k] = __uint_as_float(h ? pr[k].y : pr[k].x);
          } else {
            v[k] = raw_to_f32<In>(h ? pr[k] >> 16 : pr[k] & 0xffffu);
          }
        }
      };
      if (group_t) {
#pragma unroll
        for (int i = 0; i < S::kUnits; ++i) {
          const int u = tid + i * kThreads, cp = u >> 3, ch = u & 7;
          Pair pr[kChunk];
          load_pair(ch, cp, pr);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float v[kChunk];
            column(pr, h, v);
            col_amax[ca(ch, 2 * cp + h)] = chunk_amax(v);
          }
        }
        __syncthreads();
      }
#pragma unroll 1
      for (int i = 0; i < S::kUnits; ++i) {
        const int u = tid + i * kThreads, cp = u >> 3, ch = u & 7;
        const int64_t r = r0 + ch * kChunk;
        if (r >= r_end) continue;
        Pair pr[kChunk];
        load_pair(ch, cp, pr);
        const int n = static_cast<int>(std::min<int64_t>(r_end - r, kChunk));
        const int g0 = ch & ~(tpg - 1);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int cc = 2 * cp + h;
          const int64_t k = c0 + cc;
          if (k >= p.K) continue;
          uint32_t amax = 0;
          if (group_t) {
            for (int g = 0; g < tpg; ++g) amax = max(amax, col_amax[ca(g0 + g, cc)]);
          }
          const float s = p.format == QuantFormat::kFp8Row
                              ? static_cast<const float*>(p.scales_t)[k] : tile_s;
          const ChunkScale cs =
              chunk_scale<E>(p, amax, s, g0 == ch, p.scales_t,
                             group_scale_offset(p.swizzle, p.Ct, k, r >> p.block_shift));
          float v[kChunk];
          column(pr, h, v);
          uint32_t w[4];
          encode_chunk<E>(v, cs, w);
          if (E != Elem::kE2M1 && p.stage_t) {
            *reinterpret_cast<uint4*>(stage + cc * kTileR + ch * kChunk) =
                make_uint4(w[0], w[1], w[2], w[3]);
          } else {
            store_chunk<E>(p.data_t, k * p.R + r, n, w);
          }
        }
      }
      if (E != Elem::kE2M1 && p.stage_t) {  // warps write whole data_t row segments
        __syncthreads();
        const int warp = tid / 32, lane = tid % 32;
        const int n = static_cast<int>(r_end - r0);
        for (int cc = warp; cc < TK; cc += kThreads / 32) {
          const int64_t k = c0 + cc;
          if (k >= p.K) break;
          uint8_t* dst = p.data_t + k * p.R + r0;
          for (int j = lane; j < n; j += 32) dst[j] = stage[cc * kTileR + j];
        }
      }
    }
    __syncthreads();  // the tile buffer, col_amax and stage are free again
  }
}

// Row and column amaxes of x (R, K) in one read, for kFp8Row with the transposed copy: a CTA
// covers 64 rows x (32 * kVec) columns (warp w: rows w, w + 8, ...; lane: kVec columns), reduces
// them and merges its partial maxima into row_amax / col_amax with atomicMax (the bits of a
// non-negative float order like the float, NaN above Inf).
template <class In>
__global__ void __launch_bounds__(kThreads) rowcol_amax_kernel(const In* x, int64_t R, int64_t K,
                                                               bool vec_ok, uint32_t* row_amax,
                                                               uint32_t* col_amax) {
  constexpr int kVec = 16 / sizeof(In), kRows = 64, kCols = 32 * kVec;
  __shared__ uint32_t part[kThreads / 32][kCols];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t r0 = int64_t{blockIdx.y} * kRows, c = int64_t{blockIdx.x} * kCols + lane * kVec;
  const bool vec = vec_ok && c + kVec <= K;
  uint32_t cm[kVec] = {};
  uint4 u[kRows / 8];  // raw 16-byte rows (decoded when reduced: half the registers of floats)
#pragma unroll
  for (int i = 0; i < kRows / 8; ++i) {  // all loads first: 8 x 16 bytes in flight per thread
    const int64_t r = r0 + warp + 8 * i;
    if (vec && r < R) {
      u[i] = __ldg(reinterpret_cast<const uint4*>(x + r * K + c));
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

template <class In, Elem E, int TK>
Status launch_tile(const TileParams& base, cudaStream_t stream) {
  const size_t smem = TileShape<In, TK>::smem_bytes(base.stage_t);
  auto* kernel = quantize_tile_kernel<In, E, TK>;
  if (smem > 48 * 1024) {
    DW_CUDA_TRY("quantize", cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem)));
  }
  TileParams p = base;
  const unsigned col_tiles = static_cast<unsigned>((p.K + TK - 1) / TK);
  const int64_t cta_rows = (p.row_tiles + p.tiles_per_cta - 1) / p.tiles_per_cta;
  for (p.tile_row0 = 0; p.tile_row0 < cta_rows; p.tile_row0 += 65535) {
    const unsigned rows = static_cast<unsigned>(std::min<int64_t>(65535, cta_rows - p.tile_row0));
    kernel<<<dim3(col_tiles, rows), kThreads, smem, stream>>>(p);
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

// The instance for the format: 128-wide tiles for the 128-long groups, 64-wide otherwise.
template <class In>
Status launch_tiles(const Problem& p, const TileParams& c, cudaStream_t stream) {
  if (p.format == QuantFormat::kFp8Block1x128 || p.format == QuantFormat::kFp8Block128x128) {
    return p.elem == Elem::kE5M2 ? launch_tile<In, Elem::kE5M2, 128>(c, stream)
                                 : launch_tile<In, Elem::kE4M3, 128>(c, stream);
  }
  switch (p.elem) {
    case Elem::kE4M3: return launch_tile<In, Elem::kE4M3, 64>(c, stream);
    case Elem::kE5M2: return launch_tile<In, Elem::kE5M2, 64>(c, stream);
    default: return launch_tile<In, Elem::kE2M1, 64>(c, stream);
  }
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
    c.scales_t = p.transposed.scales;
  }
  c.amax = amax;
  c.format = p.format;
  c.rceil = p.rule == ScaleRule::kRceil;
  c.pow2 = p.pow2;
  c.swizzle = p.swizzle;
  c.block = p.traits.block == 0 ? kChunk : p.traits.block;
  c.block_shift = log2_exact(c.block);
  c.C = (c.K + c.block - 1) / c.block;
  c.Ct = (c.R + c.block - 1) / c.block;
  const int in_size = p.main.x.dtype == DType::kF32 ? 4 : 2;
  c.vec_ok = (reinterpret_cast<uintptr_t>(c.x) & 15u) == 0 && (c.K * in_size) % 16 == 0;
  c.stage_t = c.data_t && !p.traits.fp4 &&
              ((reinterpret_cast<uintptr_t>(c.data_t) & 15u) != 0 || c.R % 16 != 0);
  // About four waves of CTAs at 4 CTAs per SM, each walking 1..4 tiles (double-buffered).
  const int64_t tiles = c.row_tiles * ((c.K + 63) / 64);
  c.tiles_per_cta = std::clamp<int64_t>(tiles / (int64_t{sm_count} * 16), 1, 4);
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

Status launch_transposed(const Problem& p, const uint32_t* amax, int sm_count,
                         cudaStream_t stream) {
  const TileParams c = tile_params(p, amax, sm_count);
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
      rowcol_amax_kernel<In><<<grid, kThreads, 0, stream>>>(static_cast<const In*>(c.x), c.R, c.K,
                                                            c.vec_ok, row_amax, col_amax);
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
