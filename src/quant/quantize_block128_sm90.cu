// CUDA kernel for DeepSeek-style 128x128 block FP8 quantization (sm_90a), the weight format.
//
// One 256-thread CTA per 128x128 block: it loads the block once into registers (16 threads per row
// x 8 elements, 16 rows per pass, 8 passes), reduces the block amax, writes the FP32 scale, and
// encodes. The scale of block (i, j) of W is also the scale of block (j, i) of W^T, so the
// transposed copy is the transpose of the codes: the CTA stages its codes in shared memory and
// writes them out column by column (each thread one column of data_t's 128-byte row segment).
#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

constexpr int kTile = 128, kPitch = kTile + 16;

struct BlockParams {
  const void* x;  // (batch, rows2, cols), contiguous
  int64_t rows2, cols, brows, bcols;  // blocks per batch: brows x bcols
  uint8_t* data;
  float* scales;     // (batch, brows, bcols)
  uint8_t* data_t;   // (cols, rows2) or null (2-D x only)
  float* scales_t;   // (bcols, brows) or null
  bool pow2;
};

// 8 consecutive elements of a row (vector loads when complete and aligned).
template <class In>
__device__ __forceinline__ void load8(const In* p, int n, float (&v)[8]) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & (8 * sizeof(In) - 1)) == 0) {
    if constexpr (sizeof(In) == 4) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(p));
      const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
      v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
      v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = vec_elem<In>(u, k);
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = k < n ? to_f32(p[k]) : 0.0f;
}

template <class In, Elem E>
__global__ void __launch_bounds__(256) quantize_block128_kernel(const BlockParams p) {
  __shared__ uint32_t partial[8];
  __shared__ __align__(16) uint8_t tile[kTile][kPitch];  // 8-byte stores below
  const int64_t per_batch = p.brows * p.bcols;
  const int64_t b = blockIdx.x / per_batch, br = (blockIdx.x % per_batch) / p.bcols,
                bc = blockIdx.x % p.bcols;
  const int tr = threadIdx.x / 16, tc = (threadIdx.x % 16) * 8;  // row in pass, column in block
  const int64_t row0 = br * kTile, col = bc * kTile + tc;
  const int n = static_cast<int>(std::min<int64_t>(std::max<int64_t>(p.cols - col, 0), 8));
  const In* base = static_cast<const In*>(p.x) + b * p.rows2 * p.cols;

  float v[8][8];
  uint32_t amax = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t r = row0 + tr + 16 * i;
    const int m = r < p.rows2 ? n : 0;
    load8(base + (m ? r * p.cols + col : 0), m, v[i]);
#pragma unroll
    for (int k = 0; k < 8; ++k) amax = max(amax, abs_bits(v[i][k]));
  }
  amax = block_max_256(amax, partial);
  const float s = fp32_scale(amax, elem_info(E), p.pow2);
  if (threadIdx.x == 0) {
    p.scales[(b * p.brows + br) * p.bcols + bc] = s;
    if (p.scales_t) p.scales_t[bc * p.brows + br] = s;
  }
  const bool nan_scale = abs_bits(s) >= kF32Inf;
  // v / s as __fdiv_rn, in place (kernels.cuh, kDivLo): the scale is the CTA's, so the branch
  // is uniform; a NaN scale takes the slow path and its codes are replaced below.
  const Fp32Divider d(s);
  if (d.fast) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[i][k] = d.fast_div(v[i][k]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[i][k] = __fdiv_rn(v[i][k], s);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t r = row0 + tr + 16 * i;
    uint32_t w[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t lo = cvt_fp8x2<E>(v[i][4 * h], v[i][4 * h + 1]);
      const uint32_t hi = cvt_fp8x2<E>(v[i][4 * h + 2], v[i][4 * h + 3]);
      w[h] = nan_scale ? 0x7f7f7f7fu : (lo | hi << 16);
    }
    if (p.data_t) {
      *reinterpret_cast<uint2*>(&tile[tr + 16 * i][tc]) = make_uint2(w[0], w[1]);
    }
    if (r >= p.rows2 || n == 0) continue;
    uint8_t* dst = p.data + (b * p.rows2 + r) * p.cols + col;
    if (n == 8 && (reinterpret_cast<uintptr_t>(dst) & 7u) == 0) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if (k < n) dst[k] = static_cast<uint8_t>(w[k / 4] >> (8 * (k % 4)));
      }
    }
  }
  if (!p.data_t) return;
  __syncthreads();
  // Thread (cc, half): column cc of the block is row bc*128 + cc of data_t; it writes the 64 codes
  // of rows [half*64, half*64 + 64) of the block there, 16 at a time. Lanes read adjacent bytes of
  // one tile row: no bank conflicts.
  const int cc = threadIdx.x % kTile, half = threadIdx.x / kTile;
  const int64_t out_row = bc * kTile + cc;
  if (out_row >= p.cols) return;
  const int64_t rows_left = p.rows2 - row0;
  for (int k = 0; k < 4; ++k) {
    const int rr = half * 64 + k * 16;
    const int m = static_cast<int>(std::min<int64_t>(std::max<int64_t>(rows_left - rr, 0), 16));
    if (m == 0) break;
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int q = 0; q < 16; ++q) w[q / 4] |= static_cast<uint32_t>(tile[rr + q][cc]) << (8 * (q % 4));
    uint8_t* dst = p.data_t + out_row * p.rows2 + row0 + rr;
    if (m == 16 && aligned16(dst)) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 16; ++q) {
        if (q < m) dst[q] = static_cast<uint8_t>(w[q / 4] >> (8 * (q % 4)));
      }
    }
  }
}

template <class In>
void launch_typed(const Problem& p, const BlockParams& bp, int64_t blocks, cudaStream_t stream) {
  if (p.elem == Elem::kE5M2) {
    quantize_block128_kernel<In, Elem::kE5M2><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(bp);
  } else {
    quantize_block128_kernel<In, Elem::kE4M3><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(bp);
  }
}

}  // namespace

Status launch_block128(const Problem& p, cudaStream_t stream) {
  const Target& t = p.main;
  BlockParams bp{};
  bp.x = t.x.data;
  bp.rows2 = t.rows2;
  bp.cols = t.x.cols;
  bp.brows = (bp.rows2 + kTile - 1) / kTile;
  bp.bcols = (bp.cols + kTile - 1) / kTile;
  bp.data = t.data;
  bp.scales = static_cast<float*>(t.scales);
  if (p.has_transposed) {
    bp.data_t = p.transposed.data;
    bp.scales_t = static_cast<float*>(p.transposed.scales);
  }
  bp.pow2 = p.pow2;
  const int64_t batch = bp.rows2 == 0 ? 0 : t.x.rows / bp.rows2;
  const int64_t blocks = batch * bp.brows * bp.bcols;
  if (blocks == 0) return Status::Ok();
  switch (t.x.dtype) {
    case DType::kF32: launch_typed<float>(p, bp, blocks, stream); break;
    case DType::kF16: launch_typed<__half>(p, bp, blocks, stream); break;
    default: launch_typed<__nv_bfloat16>(p, bp, blocks, stream); break;
  }
  return detail::last_launch_status("quantize");
}

}  // namespace deepwell::quant
