// Small memory-bound kernels that let the few compiled GEMM instances serve every layout:
//  - a batched 2-D transpose (1-, 2- or 4-byte elements) that makes an M- or N-major operand
//    K-major in the workspace, for the layouts without a kernel instance of their own (and puts
//    fp8 block scales in the layout the block-scaled kernels read);
//  - an in-place strided add D += R, for the rare call with both 'c' and a distinct 'residual';
//  - an fp8 (optionally MX-scaled) to bf16 decode into a K-major copy, for the fp8 calls that run
//    on the bf16 kernels (MXFP8 with e5m2 operands, tensor scaling beyond the fp8 kernels);
//  - the MXFP8 e4m3 recast onto 1x128 / 128x128 block scales (MxToBlock), for the block kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "gemm/sm90_helpers.hpp"
#include "quant/codec.hpp"

namespace deepwell::matmul::sm90 {
namespace {

constexpr int kTile = 64;
constexpr int kRowsPerPass = 8;  // blockDim = (64, 8)

// dst(b, c, r) = src(b, r, c) for a (rows, cols) source with strides (src_rs, src_cs); dst is
// (cols, rows) with row stride dst_ld and unit column stride.
template <class T>
__global__ void transpose_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t rows,
                                 int64_t cols, int64_t src_rs, int64_t src_cs, int64_t src_bs,
                                 int64_t dst_ld, int64_t dst_bs) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t b = blockIdx.z;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  src += b * src_bs;
  dst += b * dst_bs;
  // Read along whichever source dimension is contiguous so that the loads coalesce.
  const bool cols_contiguous = src_cs == 1;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int j = threadIdx.x;
    const int64_t r = cols_contiguous ? r0 + i : r0 + j;
    const int64_t c = cols_contiguous ? c0 + j : c0 + i;
    if (r < rows && c < cols) {
      const T v = src[r * src_rs + c * src_cs];
      if (cols_contiguous) tile[i][j] = v; else tile[j][i] = v;
    }
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t c = c0 + i;  // row of dst
    const int64_t r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[c * dst_ld + r] = tile[threadIdx.x][i];
  }
}

template <class T>
__device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_f<float>(float v) { return v; }

template <class T>
__global__ void add_kernel(T* __restrict__ d, const T* __restrict__ r, int64_t rows, int64_t cols,
                           int64_t d_rs, int64_t d_cs, int64_t d_bs, int64_t r_rs, int64_t r_cs,
                           int64_t r_bs) {
  const int64_t b = blockIdx.z;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T* pd = d + b * d_bs + row * d_rs + c * d_cs;
    const float v = to_f(*pd) + to_f(r[b * r_bs + row * r_rs + c * r_cs]);
    *pd = static_cast<T>(v);
  }
}

// One block per (batch, row); dst(b, r, c) = decode(src(b, r, c)) * 2^(ue8m0 scale of (r, c / 32)).
__global__ void decode_fp8_kernel(const uint8_t* __restrict__ src, bool e5m2, int64_t rows,
                                  int64_t cols, int64_t rs, int64_t cs, int64_t bs,
                                  const uint8_t* __restrict__ scales, int64_t s_rs, int64_t s_cs,
                                  __nv_bfloat16* __restrict__ dst, int64_t ld, int64_t dst_bs) {
  const int64_t b = blockIdx.x / rows, r = blockIdx.x % rows;
  const uint8_t* row = src + b * bs + r * rs;
  __nv_bfloat16* out = dst + b * dst_bs + r * ld;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const uint8_t v = row[c * cs];
    float x = e5m2 ? quant::decode_e5m2(v) : quant::decode_e4m3(v);
    if (scales != nullptr) x *= quant::decode_ue8m0(scales[r * s_rs + (c / 32) * s_cs]);
    out[c] = __float2bfloat16_rn(x);
  }
}

// decode_fp8_kernel for rows of 16-byte aligned, contiguous bytes (cs == 1), 16 elements per
// thread and step: one 16-byte load, one scale byte, 8 hardware fp8x2 -> f16x2 conversions (exact:
// every e4m3 and e5m2 value is an f16 value), the same fp32 product and bf16 rounding as the byte
// loop (so the same bits), two 16-byte stores. The byte loop moved one byte per thread and step at
// a fraction of the memory bandwidth; MXFP8 GEMMs decode both operands before every call.
template <bool kScaled>
__global__ void decode_fp8_rows16_kernel(const uint8_t* __restrict__ src, bool e5m2, int64_t rows,
                                         int64_t cols, int64_t rs, int64_t bs,
                                         const uint8_t* __restrict__ scales, int64_t s_rs,
                                         int64_t s_cs, __nv_bfloat16* __restrict__ dst, int64_t ld,
                                         int64_t dst_bs) {
  const int64_t b = blockIdx.x / rows, r = blockIdx.x % rows;
  const uint8_t* row = src + b * bs + r * rs;
  __nv_bfloat16* out = dst + b * dst_bs + r * ld;
  const uint8_t* srow = kScaled ? scales + r * s_rs : nullptr;
  const __nv_fp8_interpretation_t kind = e5m2 ? __NV_E5M2 : __NV_E4M3;
  const int64_t chunks = cols / 16;
  for (int64_t j = threadIdx.x; j < chunks; j += blockDim.x) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(row) + j);
    const float s = kScaled ? quant::decode_ue8m0(srow[(j / 2) * s_cs]) : 1.0f;
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint32_t o[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const __half2 h(__nv_cvt_fp8x2_to_halfraw2(
          static_cast<__nv_fp8x2_storage_t>(w[i / 2] >> (16 * (i % 2))), kind));
      float2 f = __half22float2(h);
      if (kScaled) {
        f.x *= s;
        f.y *= s;
      }
      const __nv_bfloat162 q = __floats2bfloat162_rn(f.x, f.y);
      o[i] = *reinterpret_cast<const uint32_t*>(&q);
    }
    uint4* po = reinterpret_cast<uint4*>(out + 16 * j);
    po[0] = make_uint4(o[0], o[1], o[2], o[3]);
    po[1] = make_uint4(o[4], o[5], o[6], o[7]);
  }
  for (int64_t c = 16 * chunks + threadIdx.x; c < cols; c += blockDim.x) {
    float x = e5m2 ? quant::decode_e5m2(row[c]) : quant::decode_e4m3(row[c]);
    if (kScaled) x *= quant::decode_ue8m0(srow[(c / 32) * s_cs]);
    out[c] = __float2bfloat16_rn(x);
  }
}

// ------------------------------------------------------------------ MXFP8 -> block scales
// (MxToBlock in sm90_helpers.hpp.) Exponents are log2 of decoded magnitudes: a sub-block's top
// T = t(amax) + e - 127, where t(a) is a's binary exponent, plus one when a's mantissa is above
// 1.75 (so that a / 2^t <= 1.75 and a shift of the top to 2^8 stays <= 448, e4m3's largest).
// Everything works on the e4m3 bytes as integers (amax from the magnitude codes, the shift as an
// exponent add) but where a shifted element would become (or starts) subnormal.
constexpr int kTopEmpty = -30000;  // a sub-block of zeros: no top
constexpr int kTopNaN = 30000;     // a NaN scale

// A 32-element sub-block as eight packed words of e4m3 bytes (`count` <= 32 bytes at `in`; one
// pair of 16-byte loads when whole and aligned, zeros past `count`).
struct SubBlock {
  uint32_t w[8];
};

__device__ __forceinline__ SubBlock load_sub_block(const uint8_t* in, int count) {
  SubBlock b;
  if (count == 32 && reinterpret_cast<uintptr_t>(in) % 16 == 0) {
    const uint4 v0 = __ldg(reinterpret_cast<const uint4*>(in));
    const uint4 v1 = __ldg(reinterpret_cast<const uint4*>(in) + 1);
    b.w[0] = v0.x, b.w[1] = v0.y, b.w[2] = v0.z, b.w[3] = v0.w;
    b.w[4] = v1.x, b.w[5] = v1.y, b.w[6] = v1.z, b.w[7] = v1.w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t w = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (4 * i + k < count) w |= static_cast<uint32_t>(in[4 * i + k]) << (8 * k);
      }
      b.w[i] = w;
    }
  }
  return b;
}

__device__ __forceinline__ void store_sub_block(uint8_t* out, int count, const SubBlock& b) {
  if (count == 32) {  // out is 16-byte aligned: ld is a multiple of 16
    reinterpret_cast<uint4*>(out)[0] = make_uint4(b.w[0], b.w[1], b.w[2], b.w[3]);
    reinterpret_cast<uint4*>(out)[1] = make_uint4(b.w[4], b.w[5], b.w[6], b.w[7]);
    return;
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    if (i < count) out[i] = static_cast<uint8_t>(b.w[i / 4] >> (8 * (i % 4)));
  }
}

// The magnitude codes (bits & 0x7f, ordered as the magnitudes) of a sub-block: the largest and
// the smallest non-zero one, NaN (0x7f) left out of both (0 and 0x7f when nothing is left).
__device__ __forceinline__ void magnitude_range(const SubBlock& b, uint32_t* hi, uint32_t* lo) {
  uint32_t mx = 0, mn = 0x7f7f7f7fu;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t mag = b.w[i] & 0x7f7f7f7fu;
    const uint32_t nan = __vcmpeq4(mag, 0x7f7f7f7fu);
    mx = __vmaxu4(mx, mag & ~nan);
    mn = __vminu4(mn, mag | (__vcmpeq4(mag, 0u) & 0x7f7f7f7fu));  // zeros -> 0x7f
  }
  mx = max(max(mx & 0xff, (mx >> 8) & 0xff), max((mx >> 16) & 0xff, mx >> 24));
  mn = min(min(mn & 0xff, (mn >> 8) & 0xff), min((mn >> 16) & 0xff, mn >> 24));
  *hi = mx;
  *lo = mn;
}

// The largest magnitude code alone (the columns side's tops pass needs no smallest): bytes 0 and
// 2 and bytes 1 and 3 of each word as 16-bit lanes, one VIMNMX.U16x2 each, where the byte-wise
// max of magnitude_range costs ~10 emulated instructions a word (tops pass 27.4 -> 24.8 us at
// 8192^2, session 48). A NaN code (0x7f, the largest) sends the sub-block to magnitude_range.
__device__ __forceinline__ uint32_t largest_code(const SubBlock& b) {
  uint32_t even = 0, odd = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    even = __vmaxu2(even, b.w[i] & 0x007f007fu);
    odd = __vmaxu2(odd, b.w[i] & 0x7f007f00u);
  }
  const uint32_t m = __vmaxu2(even, odd >> 8);
  uint32_t hi = max(m & 0xffffu, m >> 16);
  if (hi == 0x7f) {
    uint32_t lo;
    magnitude_range(b, &hi, &lo);
  }
  return hi;
}

// The sub-block's top from its largest magnitude code and scale: floor(log2) of the e4m3 value
// (normal: E - 7; subnormal m * 2^-9: the top bit of m, - 9), + 1 for mantissa 1.875 (the only
// e4m3 mantissa above 1.75), + e - 127.
__device__ __forceinline__ int top_of(uint32_t code, int e) {
  if (e == 255) return kTopNaN;
  if (code == 0) return kTopEmpty;
  const int ex = static_cast<int>(code >> 3), m = static_cast<int>(code & 7);
  const int t = ex != 0 ? ex - 7 + (m == 7 ? 1 : 0) : 31 - __clz(m) - 9;
  return t + e - 127;
}

// Every element times 2^u (u >= -254), rounded to e4m3 (RNE, saturating). Where every non-zero
// element stays a normal number (and none starts subnormal) that is an add of u to the exponent
// field, done on four bytes at a time (no borrow or carry leaves a byte: each magnitude stays
// within 0x08..0x7e); else each element is decoded, multiplied in fp32 (exact) and rounded once.
__device__ __forceinline__ void scale_sub_block(SubBlock& b, int u, uint32_t hi, uint32_t lo) {
  if (u == 0) return;
  const bool integer_path = u < 0 ? lo >= static_cast<uint32_t>((1 - u) << 3)
                                  : lo >= 8 && hi + (static_cast<uint32_t>(u) << 3) <= 0x7eu;
  if (integer_path) {
    const uint32_t step = (static_cast<uint32_t>(u < 0 ? -u : u) << 3) * 0x01010101u;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t mag = b.w[i] & 0x7f7f7f7fu;
      const uint32_t keep = __vcmpeq4(mag, 0u) | __vcmpeq4(mag, 0x7f7f7f7fu);  // zeros, NaN
      const uint32_t d = step & ~keep;
      b.w[i] = u < 0 ? b.w[i] - d : b.w[i] + d;
    }
    return;
  }
  // 2^u as an fp32 factor; below 2^-126 every e4m3 value (<= 448) times it rounds to zero.
  const float s = u < -126 ? 0.0f : __int_as_float((u + 127) << 23);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    uint32_t o = 0;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const __half2 h(__nv_cvt_fp8x2_to_halfraw2(
          static_cast<__nv_fp8x2_storage_t>(b.w[i] >> (16 * p)), __NV_E4M3));
      const float2 f = __half22float2(h);
      o |= static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(f.x * s, f.y * s),
                                                         __NV_SATFINITE, __NV_E4M3))
           << (16 * p);
    }
    b.w[i] = o;
  }
}

// The fp32 factor of a block's top: 2^(top - 8) (the top lands at 2^8), NaN for a NaN scale, 1
// for a block of zeros.
__device__ __forceinline__ float top_factor(int top) {
  return top == kTopNaN     ? __int_as_float(0x7fc00000)
         : top == kTopEmpty ? 1.0f
                            : ldexpf(1.0f, top - 8);
}

// Columns side, step 1: one warp per row: each sub-block's top T(r, j) into `tops` (rows, kb32),
// the row's top T_r = max_j T(r, j) (kTopNaN when a scale is NaN: it is the largest code) into
// exps[r], and the row scale 2^(T_r - 8) (NaN for a NaN scale, 1 for a row of zeros).
__global__ void mx_tops_kernel(const uint8_t* __restrict__ src, int64_t rows, int64_t cols,
                               int64_t rs, const uint8_t* __restrict__ scales, int64_t s_rs,
                               int64_t s_cs, int64_t kb32, int32_t* __restrict__ tops,
                               int32_t* __restrict__ exps, float* __restrict__ row_scales) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;  // whole warps
  const int lane = threadIdx.x % 32;
  int t_r = kTopEmpty;
  for (int64_t j0 = 2 * lane; j0 < kb32; j0 += 64) {  // two sub-blocks per lane and step
    SubBlock x[2];
    int count[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t c0 = 32 * (j0 + h);
      count[h] = j0 + h < kb32 ? (cols - c0 < 32 ? static_cast<int>(cols - c0) : 32) : 0;
      x[h] = count[h] > 0 ? load_sub_block(src + r * rs + c0, count[h]) : SubBlock{};
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (count[h] == 0) continue;
      const int t = top_of(largest_code(x[h]), __ldg(scales + r * s_rs + (j0 + h) * s_cs));
      tops[r * kb32 + j0 + h] = t;
      t_r = max(t_r, t);
    }
  }
  t_r = __reduce_max_sync(0xffffffffu, t_r);
  if (lane == 0) {
    exps[r] = t_r;
    row_scales[r] = top_factor(t_r);
  }
}

// Columns side, step 2: R(nb, kb) = max over the 128x128 block's rows and sub-blocks of
// T(r, j) - T_r (<= 0; rows with a NaN scale or no top left out; 0 when nothing is left) into
// exps and sfb = 2^R. A CTA takes one 128-row block and 32 sub-blocks (8 blocks) along K: each of
// its four warps 32 rows, one coalesced 128-byte load of tops per row, each lane one sub-block
// column (until session 47 a warp took one block, lanes four rows apart: sixteen scattered
// 4-byte loads per lane, 10.7 us at 8192^2 for 8 MB). Groups of four lanes, then the four
// warps through shared memory, reduce to R.
__global__ void __launch_bounds__(128) mx_block_exponents_kernel(
    const int32_t* __restrict__ tops, int64_t rows, int64_t kb32, int64_t kb128,
    float* __restrict__ sfb, int64_t sfb_ld, int32_t* __restrict__ exps) {
  constexpr int kBatch = 8;  // loads in flight per lane
  __shared__ int partial[4][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t nb = blockIdx.x;
  const int64_t j = static_cast<int64_t>(blockIdx.y) * 32 + lane;
  const int64_t row0 = nb * 128 + 32 * warp;
  const int my_t_r = row0 + lane < rows ? exps[row0 + lane] : kTopEmpty;
  int rel = kTopEmpty;
#pragma unroll
  for (int i0 = 0; i0 < 32; i0 += kBatch) {
    int t[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int64_t r = row0 + i0 + i;
      t[i] = r < rows && j < kb32 ? tops[r * kb32 + j] : kTopEmpty;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int t_r = __shfl_sync(0xffffffffu, my_t_r, i0 + i);
      if (t_r != kTopNaN && t_r != kTopEmpty && t[i] != kTopEmpty) rel = max(rel, t[i] - t_r);
    }
  }
  rel = max(rel, __shfl_xor_sync(0xffffffffu, rel, 1));
  rel = max(rel, __shfl_xor_sync(0xffffffffu, rel, 2));
  partial[warp][lane] = rel;
  __syncthreads();
  if (warp != 0 || lane % 4 != 0) return;
  rel = max(max(partial[0][lane], partial[1][lane]), max(partial[2][lane], partial[3][lane]));
  const int64_t kb = j / 4;
  if (kb >= kb128) return;
  const int f = rel == kTopEmpty ? 0 : rel;
  exps[rows + nb * kb128 + kb] = f;
  sfb[nb * sfb_ld + kb] = ldexpf(1.0f, f);
}

// One operand's convert pass (a plain kernel parameter; MxToBlock less the passes' results).
struct ConvertArgs {
  const uint8_t* src;
  int64_t rows, cols, rs;
  const uint8_t* scales;
  int64_t s_rs, s_cs, kb32, kb128;
  uint8_t* dst;
  int64_t ld;
  float* sfa;  // rows side
  int64_t sfa_ld;
  const int32_t* exps;  // columns side
};

// The recast proper: one thread per (row, 128-block kb, half of it): two sub-blocks, both loaded
// before either is used (64 bytes in flight per thread), two lanes per 128-block (a partial last
// block idles what it lacks). The element factor is 2^(e - 127 - B + 8) with B the block's top:
// rows side, the max of the four sub-blocks' tops (one lane shuffle; the first lane writes sfa =
// 2^(B - 8), NaN when a scale is NaN, 1 for zeros); columns side, T_r + R from the exponent
// passes. Elements of a NaN-scaled row or block are written as zeros.
template <bool kColumns>
__device__ __forceinline__ void convert_lane(const ConvertArgs& p, int64_t idx) {
  const uint8_t* __restrict__ src = p.src;
  const uint8_t* __restrict__ scales = p.scales;
  uint8_t* __restrict__ dst = p.dst;
  float* __restrict__ sfa = p.sfa;
  const int32_t* __restrict__ exps = p.exps;
  const int64_t rows = p.rows, cols = p.cols, rs = p.rs, s_rs = p.s_rs, s_cs = p.s_cs;
  const int64_t kb32 = p.kb32, kb128 = p.kb128, ld = p.ld, sfa_ld = p.sfa_ld;
  int64_t r, kb;
  if (rows * kb128 * 2 <= 0xffffffffll) {  // 32-bit division where the indices fit
    const uint32_t group = static_cast<uint32_t>(idx) / 2;
    r = group / static_cast<uint32_t>(kb128);
    kb = group % static_cast<uint32_t>(kb128);
  } else {
    r = idx / 2 / kb128;
    kb = idx / 2 % kb128;
  }
  const int64_t j0 = 4 * kb + 2 * (idx % 2);
  const bool live[2] = {r < rows && j0 < kb32, r < rows && j0 + 1 < kb32};
  SubBlock x[2];
  int e[2], count[2];
  uint32_t hi[2] = {0, 0}, lo[2] = {0x7f, 0x7f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t c0 = 32 * (j0 + h);
    count[h] = live[h] ? (cols - c0 < 32 ? static_cast<int>(cols - c0) : 32) : 0;
    e[h] = live[h] ? __ldg(scales + r * s_rs + (j0 + h) * s_cs) : 0;
    x[h] = live[h] ? load_sub_block(src + r * rs + c0, count[h]) : SubBlock{};
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (live[h]) magnitude_range(x[h], &hi[h], &lo[h]);
  }
  int block_top;
  if constexpr (kColumns) {
    if (!live[0]) return;  // no shuffles on this side: done early
    const int t_r = exps[r];
    block_top = t_r == kTopNaN ? kTopNaN
                : t_r == kTopEmpty ? kTopEmpty
                                   : t_r + exps[rows + (r / 128) * kb128 + kb];
  } else {
    const int t = max(live[0] ? top_of(hi[0], e[0]) : kTopEmpty,
                      live[1] ? top_of(hi[1], e[1]) : kTopEmpty);
    block_top = max(t, __shfl_xor_sync(0xffffffffu, t, 1));
    if (live[0] && idx % 2 == 0) {
      sfa[kb * sfa_ld + r] = top_factor(block_top);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!live[h]) continue;
    if (block_top == kTopNaN) {
      x[h] = SubBlock{};  // its D row or column is NaN through the scale
    } else if (block_top != kTopEmpty) {  // (a block of zeros and NaN stays as it is)
      scale_sub_block(x[h], max(e[h] - 127 - block_top + 8, -254), hi[h], lo[h]);
    }
    store_sub_block(dst + r * ld + 32 * (j0 + h), count[h], x[h]);
  }
}

// Both operands' converts in one grid (A's CTAs first): one tail of partly filled SMs instead of
// two, and one launch less (session 49: 47.1 + 46.5 -> 89.8 us at 8192^3). A CTA is wholly one
// side, so the rows side's lane pairs stay whole.
__global__ void mx_convert_kernel(const ConvertArgs rows_side, unsigned rows_blocks,
                                  const ConvertArgs columns_side) {
  if (blockIdx.x < rows_blocks) {
    convert_lane<false>(rows_side, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
  } else {
    convert_lane<true>(columns_side,
                       static_cast<int64_t>(blockIdx.x - rows_blocks) * blockDim.x + threadIdx.x);
  }
}

ConvertArgs convert_args(const MxToBlock& x) {
  return ConvertArgs{static_cast<const uint8_t*>(x.src),
                     x.rows, x.cols, x.rs,
                     static_cast<const uint8_t*>(x.scales),
                     x.s_rs, x.s_cs, (x.cols + 31) / 32, (x.cols + 127) / 128,
                     static_cast<uint8_t*>(x.dst), x.ld,
                     x.columns ? nullptr : x.block_scales, x.columns ? 0 : x.block_ld,
                     x.columns ? x.exps : nullptr};
}

int64_t convert_blocks(const MxToBlock& x) {  // 256 lanes a CTA, two lanes a 128-block
  return (x.rows * ((x.cols + 127) / 128) * 2 + 255) / 256;
}

// Columns side, before its convert: the sub-block tops with T_r and the row scales, then R.
void launch_exponent_passes(const MxToBlock& x, cudaStream_t s) {
  const int64_t kb32 = (x.cols + 31) / 32, kb128 = (x.cols + 127) / 128;
  const int64_t nb = (x.rows + 127) / 128;
  int32_t* tops = x.exps + x.rows + nb * kb128;
  mx_tops_kernel<<<static_cast<unsigned>((x.rows + 7) / 8), 256, 0, s>>>(
      static_cast<const uint8_t*>(x.src), x.rows, x.cols, x.rs,
      static_cast<const uint8_t*>(x.scales), x.s_rs, x.s_cs, kb32, tops, x.exps, x.row_scales);
  mx_block_exponents_kernel<<<dim3(static_cast<unsigned>(nb),
                                   static_cast<unsigned>((kb32 + 31) / 32)),
                              128, 0, s>>>(tops, x.rows, kb32, kb128, x.block_scales,
                                           x.block_ld, x.exps);
}

}  // namespace

Status mx_to_block(const MxToBlock& rows_side, const MxToBlock& columns_side, void* stream) {
  const int64_t a_blocks = convert_blocks(rows_side), b_blocks = convert_blocks(columns_side);
  if (a_blocks + b_blocks > 2147483647) {
    return Status(StatusCode::kNotSupported, "gemm_fp8: operand too large for the MX recast");
  }
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  launch_exponent_passes(columns_side, s);
  mx_convert_kernel<<<static_cast<unsigned>(a_blocks + b_blocks), 256, 0, s>>>(
      convert_args(rows_side), static_cast<unsigned>(a_blocks), convert_args(columns_side));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(StatusCode::kCudaError, std::string("gemm_fp8: MX recast launch failed: ") +
                                              cudaGetErrorString(err));
  }
  return Status::Ok();
}

Status decode_fp8(const DecodeFp8& d, void* stream) {
  const int64_t blocks = d.batch * d.rows;
  if (blocks > 2147483647) {
    return Status(StatusCode::kNotSupported, "gemm_fp8: operand too large for the decode pass");
  }
  const auto* src = static_cast<const uint8_t*>(d.src);
  const auto* scales = static_cast<const uint8_t*>(d.scales);
  auto* dst = static_cast<__nv_bfloat16*>(d.dst);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Vector path: unit stride along K and every row start on a 16-byte boundary (the destination's
  // rows are: ld is a multiple of 8 elements in a 256-byte aligned workspace buffer).
  const bool vec = (d.cs == 1 || d.cols <= 1) && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
                   (d.rows <= 1 || d.rs % 16 == 0) && (d.batch <= 1 || d.bs % 16 == 0) &&
                   reinterpret_cast<uintptr_t>(dst) % 16 == 0 && d.ld % 8 == 0 &&
                   d.dst_bs % 8 == 0;
  if (vec && scales) {
    decode_fp8_rows16_kernel<true><<<static_cast<unsigned>(blocks), 256, 0, s>>>(
        src, d.e5m2, d.rows, d.cols, d.rs, d.bs, scales, d.s_rs, d.s_cs, dst, d.ld, d.dst_bs);
  } else if (vec) {
    decode_fp8_rows16_kernel<false><<<static_cast<unsigned>(blocks), 256, 0, s>>>(
        src, d.e5m2, d.rows, d.cols, d.rs, d.bs, nullptr, 0, 0, dst, d.ld, d.dst_bs);
  } else {
    decode_fp8_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(
        src, d.e5m2, d.rows, d.cols, d.rs, d.cs, d.bs, scales, d.s_rs, d.s_cs, dst, d.ld,
        d.dst_bs);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(StatusCode::kCudaError, std::string("gemm_fp8: decode launch failed: ") +
                                              cudaGetErrorString(err));
  }
  return Status::Ok();
}

Status transpose(const Transpose& t, void* stream) {
  const dim3 block(kTile, kRowsPerPass);
  const dim3 grid(static_cast<unsigned>((t.cols + kTile - 1) / kTile),
                  static_cast<unsigned>((t.rows + kTile - 1) / kTile),
                  static_cast<unsigned>(t.batch));
  if (grid.y > 65535u || grid.z > 65535u) {
    return Status(StatusCode::kNotSupported, "gemm: operand too large for the layout transpose");
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (t.elem_bytes) {
    case 1:
      transpose_kernel<uint8_t><<<grid, block, 0, s>>>(
          static_cast<const uint8_t*>(t.src), static_cast<uint8_t*>(t.dst), t.rows, t.cols,
          t.src_row_stride, t.src_col_stride, t.src_batch_stride, t.dst_ld, t.dst_batch_stride);
      break;
    case 2:
      transpose_kernel<uint16_t><<<grid, block, 0, s>>>(
          static_cast<const uint16_t*>(t.src), static_cast<uint16_t*>(t.dst), t.rows, t.cols,
          t.src_row_stride, t.src_col_stride, t.src_batch_stride, t.dst_ld, t.dst_batch_stride);
      break;
    case 4:
      transpose_kernel<uint32_t><<<grid, block, 0, s>>>(
          static_cast<const uint32_t*>(t.src), static_cast<uint32_t*>(t.dst), t.rows, t.cols,
          t.src_row_stride, t.src_col_stride, t.src_batch_stride, t.dst_ld, t.dst_batch_stride);
      break;
    default:
      return Status(StatusCode::kInternal, "gemm: transpose of an unexpected element size");
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(StatusCode::kCudaError, std::string("gemm: transpose launch failed: ") +
                                              cudaGetErrorString(err));
  }
  return Status::Ok();
}

Status add_inplace(const AddInPlace& a, void* stream) {
  const dim3 block(128, 4);
  const unsigned gx = static_cast<unsigned>(std::min<int64_t>((a.cols + 127) / 128, 64));
  const dim3 grid(gx, static_cast<unsigned>((a.rows + 3) / 4), static_cast<unsigned>(a.batch));
  if (grid.y > 65535u || grid.z > 65535u) {
    return Status(StatusCode::kNotSupported, "gemm: output too large for the residual pass");
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (a.dtype) {
    case DType::kF32:
      add_kernel<float><<<grid, block, 0, s>>>(static_cast<float*>(a.d),
                                               static_cast<const float*>(a.r), a.rows, a.cols,
                                               a.d_rs, a.d_cs, a.d_bs, a.r_rs, a.r_cs, a.r_bs);
      break;
    case DType::kF16:
      add_kernel<__half><<<grid, block, 0, s>>>(static_cast<__half*>(a.d),
                                                static_cast<const __half*>(a.r), a.rows, a.cols,
                                                a.d_rs, a.d_cs, a.d_bs, a.r_rs, a.r_cs, a.r_bs);
      break;
    case DType::kBF16:
      add_kernel<__nv_bfloat16><<<grid, block, 0, s>>>(
          static_cast<__nv_bfloat16*>(a.d), static_cast<const __nv_bfloat16*>(a.r), a.rows,
          a.cols, a.d_rs, a.d_cs, a.d_bs, a.r_rs, a.r_cs, a.r_bs);
      break;
    default:
      return Status(StatusCode::kInternal, "gemm: residual pass for an unexpected dtype");
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status(StatusCode::kCudaError, std::string("gemm: residual pass launch failed: ") +
                                              cudaGetErrorString(err));
  }
  return Status::Ok();
}

}  // namespace deepwell::matmul::sm90
