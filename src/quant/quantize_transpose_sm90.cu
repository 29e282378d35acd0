// CUDA kernels for a quantize() call with the transposed copy (sm_90a): data = quantize(x) and
// data_t = quantize(x^T) of a 2-D, contiguous x (R, K), both from ONE read of x.
//
// quantize_tile_kernel: a 256-thread CTA owns a 128 (R) x TK (K) tile of x (TK = 128 for
// kFp8Block1x128, whose groups are 128 long in both directions, 64 otherwise).
//  1. load: 16-byte global loads (or zero-filled element loads on an edge or unaligned tile) into
//     shared memory, the raw 2- or 4-byte values; zeros do not change an amax.
//  2. rows: each thread encodes 16-element chunks of tile rows (group amax over block/16 adjacent
//     lanes with shuffles, as quantize_groups_kernel) and stores them to data.
//  3. columns: a unit is (column pair, 16 rows); the lanes of a warp take 32 adjacent column pairs
//     of the same rows, so every shared load of a warp reads one contiguous 128-byte row segment
//     (no bank conflicts). Pass 1 writes the amax of every (column, 16 rows) to shared memory;
//     pass 2 combines block/16 of them into the group amax, re-reads the values and encodes them
//     into 16 consecutive codes of a data_t row (16-byte stores; 8 for fp4).
// Scales and codes come from codec.hpp through encode_chunk, exactly as the row kernels.
//
// kFp8Tensor reads the tensor amax of launch_amax (quantize_sm90.cu); kFp8Row first reduces the
// row and the column amaxes of x in one pass (rowcol_amax_kernel, atomicMax into the two scale
// outputs), converts them to scales in place, then the tile kernel encodes with them: two reads of
// x instead of one, bound to about (in + out) / (2 in + out) of copy bandwidth.
// kFp8Block128x128 is not here: its transposed copy is the transpose of its codes
// (quantize_block128_sm90.cu).
#include <type_traits>

#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

constexpr int kTileR = 128;  // rows of x per tile: a multiple of every group (16, 32, 128)
constexpr int kThreads = 256;

struct TileParams {
  const void* x;  // (R, K), contiguous
  int64_t R, K;
  uint8_t* data;    // (R, K) codes
  void* scales;     // its scales (kFp8Row: the finished per-row scales)
  uint8_t* data_t;  // (K, R) codes
  void* scales_t;   // its scales (kFp8Row: the finished per-column scales of x)
  const uint32_t* amax;  // tensor amax bits (kFp8Tensor, kNvfp4)
  QuantFormat format;
  bool rceil, pow2, swizzle;
  bool vec_ok;      // x and its rows are 16-byte aligned: 16-byte loads on full tiles
  int block;        // scale group (16, 32, 128) in both directions; 16 for kFp8Tensor / kFp8Row
  int block_shift;  // log2(block)
  int64_t C, Ct;    // scale columns of data (per row of x) and of data_t (per column of x)
  int64_t tile_row0;  // first row tile of this launch (gridDim.y is at most 65535)
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

// The scale of one chunk of a group with the given amax; the group's first chunk (writer) stores
// it at scales[si]. fixed_s: kFp8Tensor's scale, kNvfp4's s_t, or kFp8Row's row / column scale.
template <Elem E>
__device__ __forceinline__ ChunkScale chunk_scale(const TileParams& p, uint32_t amax, float fixed_s,
                                                  bool writer, void* scales, int64_t si) {
  const ElemInfo info = elem_info(E);
  ChunkScale cs{ChunkScale::kFp32, fixed_s, 0};
  switch (p.format) {
    case QuantFormat::kFp8Tensor:
    case QuantFormat::kFp8Row:
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

template <class In, Elem E, int TK>
__global__ void __launch_bounds__(kThreads) quantize_tile_kernel(const TileParams p) {
  static_assert(TK == 64 || TK == 128, "tile width: 64, or 128 for the 1x128 groups");
  static_assert(E != Elem::kE2M1 || TK == 64, "fp4 formats have groups of 16 or 32");
  using R_ = Raw<In>;
  constexpr int kVec = 16 / sizeof(In);        // elements per 16-byte access
  constexpr int kVecPerRow = TK / kVec;
  constexpr int kLoads = kTileR * kVecPerRow / kThreads;  // 16-byte loads per thread
  static_assert(kTileR * kVecPerRow % kThreads == 0, "whole loads per thread");
  constexpr int kCpr = TK / kChunk;            // 16-element chunks per tile row
  constexpr int kRowChunks = kTileR * kCpr / kThreads;
  constexpr int kPairs = TK / 2;               // column pairs
  constexpr int kUnits = kPairs * (kTileR / kChunk) / kThreads;  // (pair, 16 rows) per thread
  static_assert(kTileR * kCpr % kThreads == 0 && kPairs * (kTileR / kChunk) % kThreads == 0,
                "whole chunks and units per thread");
  static_assert(kPairs % 32 == 0, "a warp's units share their rows (conflict-free column reads)");

  extern __shared__ __align__(16) uint8_t smem_raw[];
  R_* tile = reinterpret_cast<R_*>(smem_raw);  // [kTileR][TK]
  __shared__ uint32_t col_amax[kTileR / kChunk][TK];

  const int64_t r0 = (p.tile_row0 + blockIdx.y) * kTileR, c0 = int64_t{blockIdx.x} * TK;
  const R_* x = static_cast<const R_*>(p.x);

  // 1. load
  if (p.vec_ok && r0 + kTileR <= p.R && c0 + TK <= p.K) {
    uint4 buf[kLoads];  // all loads issued before the first shared store
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int q = threadIdx.x + i * kThreads, rr = q / kVecPerRow, cc = (q % kVecPerRow) * kVec;
      buf[i] = __ldg(reinterpret_cast<const uint4*>(x + (r0 + rr) * p.K + c0 + cc));
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int q = threadIdx.x + i * kThreads, rr = q / kVecPerRow, cc = (q % kVecPerRow) * kVec;
      *reinterpret_cast<uint4*>(tile + rr * TK + cc) = buf[i];
    }
  } else {
    for (int q = threadIdx.x; q < kTileR * TK; q += kThreads) {
      const int rr = q / TK, cc = q % TK;
      const int64_t r = r0 + rr, c = c0 + cc;
      tile[q] = r < p.R && c < p.K ? x[r * p.K + c] : R_{0};
    }
  }
  __syncthreads();

  float fixed_s = 0.0f;  // kFp8Tensor: the scale; kNvfp4: s_t
  if (p.format == QuantFormat::kFp8Tensor) fixed_s = fp32_scale(*p.amax, elem_info(E), p.pow2);
  if (p.format == QuantFormat::kNvfp4) fixed_s = nvfp4_tensor_scale(*p.amax);
  const int tpg = p.block / kChunk;  // chunks per scale group: 1, 2 or 8

  // 2. rows of x -> data
#pragma unroll 1
  for (int i = 0; i < kRowChunks; ++i) {
    const int q = threadIdx.x + i * kThreads, rr = q / kCpr, cc = (q % kCpr) * kChunk;
    const int64_t r = r0 + rr, c = c0 + cc;
    float v[kChunk];
    const uint4* src = reinterpret_cast<const uint4*>(tile + rr * TK + cc);
#pragma unroll
    for (int j = 0; j < kChunk / kVec; ++j) {
      const uint4 u = src[j];
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[j * kVec + k] = vec_elem<In>(u, k);
    }
    uint32_t amax = chunk_amax(v);
    // the lanes of a group are adjacent and aligned (kCpr is a multiple of tpg)
    for (int o = 1; o < tpg; o <<= 1) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (r >= p.R || c >= p.K) continue;
    const float s = p.format == QuantFormat::kFp8Row ? static_cast<const float*>(p.scales)[r]
                                                     : fixed_s;
    const ChunkScale cs = chunk_scale<E>(p, amax, s, ((cc / kChunk) & (tpg - 1)) == 0, p.scales,
                                         group_scale_offset(p.swizzle, p.C, r, c >> p.block_shift));
    uint32_t w[4];
    encode_chunk<E>(v, cs, w);
    store_chunk<E>(p.data, r * p.K + c, static_cast<int>(std::min<int64_t>(p.K - c, kChunk)), w);
  }

  // 3. columns of x -> rows of data_t
  auto load_pair = [&](int ch, int cp, float (&a)[kChunk], float (&b)[kChunk]) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const R_* e = tile + (ch * kChunk + k) * TK + 2 * cp;
      if constexpr (sizeof(In) == 4) {
        const uint2 u = *reinterpret_cast<const uint2*>(e);
        a[k] = __uint_as_float(u.x);
        b[k] = __uint_as_float(u.y);
      } else {
        const uint32_t u = *reinterpret_cast<const uint32_t*>(e);
        a[k] = raw_to_f32<In>(u & 0xffffu);
        b[k] = raw_to_f32<In>(u >> 16);
      }
    }
  };
#pragma unroll
  for (int i = 0; i < kUnits; ++i) {
    const int u = threadIdx.x + i * kThreads, cp = u % kPairs, ch = u / kPairs;
    float a[kChunk], b[kChunk];
    load_pair(ch, cp, a, b);
    col_amax[ch][2 * cp] = chunk_amax(a);
    col_amax[ch][2 * cp + 1] = chunk_amax(b);
  }
  __syncthreads();
#pragma unroll 1
  for (int i = 0; i < kUnits; ++i) {
    const int u = threadIdx.x + i * kThreads, cp = u % kPairs, ch = u / kPairs;
    const int64_t r = r0 + ch * kChunk;
    if (r >= p.R) continue;
    float v[2][kChunk];
    load_pair(ch, cp, v[0], v[1]);
    const int n = static_cast<int>(std::min<int64_t>(p.R - r, kChunk));
    const int g0 = ch & ~(tpg - 1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int cc = 2 * cp + h;
      const int64_t k = c0 + cc;
      if (k >= p.K) continue;
      uint32_t amax = 0;
      for (int g = 0; g < tpg; ++g) amax = max(amax, col_amax[g0 + g][cc]);
      const float s = p.format == QuantFormat::kFp8Row ? static_cast<const float*>(p.scales_t)[k]
                                                       : fixed_s;
      const ChunkScale cs = chunk_scale<E>(p, amax, s, g0 == ch, p.scales_t,
                                           group_scale_offset(p.swizzle, p.Ct, k, r >> p.block_shift));
      uint32_t w[4];
      encode_chunk<E>(v[h], cs, w);
      store_chunk<E>(p.data_t, k * p.R + r, n, w);
    }
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
  float v[kRows / 8][kVec];
#pragma unroll
  for (int i = 0; i < kRows / 8; ++i) {  // all loads first: 8 x 16 bytes in flight per thread
    const int64_t r = r0 + warp + 8 * i;
    if (vec && r < R) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(x + r * K + c));
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[i][k] = vec_elem<In>(u, k);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[i][k] = r < R && c + k < K ? to_f32(x[r * K + c + k]) : 0.0f;
    }
  }
#pragma unroll
  for (int i = 0; i < kRows / 8; ++i) {
    uint32_t m = 0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const uint32_t a = abs_bits(v[i][k]);
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
Status launch_tile(const TileParams& base, int64_t row_tiles, cudaStream_t stream) {
  const size_t smem = size_t{kTileR} * TK * sizeof(In);
  auto* kernel = quantize_tile_kernel<In, E, TK>;
  if (smem > 48 * 1024) {
    DW_CUDA_TRY("quantize", cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem)));
  }
  TileParams p = base;
  const unsigned col_tiles = static_cast<unsigned>((p.K + TK - 1) / TK);
  for (p.tile_row0 = 0; p.tile_row0 < row_tiles; p.tile_row0 += 65535) {
    const unsigned rows = static_cast<unsigned>(std::min<int64_t>(65535, row_tiles - p.tile_row0));
    kernel<<<dim3(col_tiles, rows), kThreads, smem, stream>>>(p);
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

// The instance for the format: 128-wide tiles for the 1x128 groups, 64-wide otherwise.
template <class In>
Status launch_tiles(const Problem& p, const TileParams& c, int64_t row_tiles, cudaStream_t stream) {
  if (p.format == QuantFormat::kFp8Block1x128) {
    return p.elem == Elem::kE5M2 ? launch_tile<In, Elem::kE5M2, 128>(c, row_tiles, stream)
                                 : launch_tile<In, Elem::kE4M3, 128>(c, row_tiles, stream);
  }
  switch (p.elem) {
    case Elem::kE4M3: return launch_tile<In, Elem::kE4M3, 64>(c, row_tiles, stream);
    case Elem::kE5M2: return launch_tile<In, Elem::kE5M2, 64>(c, row_tiles, stream);
    default: return launch_tile<In, Elem::kE2M1, 64>(c, row_tiles, stream);
  }
}

}  // namespace

Status launch_transposed(const Problem& p, const uint32_t* amax, cudaStream_t stream) {
  const Target& t = p.transposed;
  TileParams c{};
  c.x = p.main.x.data;
  c.R = p.main.x.rows;
  c.K = p.main.x.cols;
  c.data = p.main.data;
  c.scales = p.main.scales;
  c.data_t = t.data;
  c.scales_t = t.scales;
  c.amax = amax;
  c.format = p.format;
  c.rceil = p.rule == ScaleRule::kRceil;
  c.pow2 = p.pow2;
  c.swizzle = p.swizzle;
  c.block = p.traits.block == 0 ? kChunk : p.traits.block;
  c.block_shift = log2_exact(c.block);
  c.C = (c.K + c.block - 1) / c.block;
  c.Ct = (c.R + c.block - 1) / c.block;
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
  const int in_size = p.main.x.dtype == DType::kF32 ? 4 : 2;
  c.vec_ok = (reinterpret_cast<uintptr_t>(c.x) & 15u) == 0 && (c.K * in_size) % 16 == 0;

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
  const int64_t row_tiles = (c.R + kTileR - 1) / kTileR;
  switch (p.main.x.dtype) {
    case DType::kF32: return launch_tiles<float>(p, c, row_tiles, stream);
    case DType::kF16: return launch_tiles<__half>(p, c, row_tiles, stream);
    default: return launch_tiles<__nv_bfloat16>(p, c, row_tiles, stream);
  }
}

}  // namespace deepwell::quant
