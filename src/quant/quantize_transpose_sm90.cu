// CUDA kernels for the transposed quantized copy (sm_90a): data_t = quantize(x^T) for a 2-D,
// contiguous x of shape (R, K), so data_t is (K, R) with its scale groups running along R.
//
// A thread owns one scale group of one row of x^T, i.e. `group` consecutive rows of x in one
// column; the 32 lanes of a warp take 32 adjacent columns, so every load instruction of a warp
// reads 32 consecutive elements of one row of x (coalesced without a shared-memory transpose).
// The group is walked twice (amax, then encode; the second walk hits L1), and each thread writes
// its 16-code chunks to its own row of data_t.
//
// kFp8Row (per-row scales of x^T = per-column scales of x) first reduces column amaxes with
// atomicMax into scales_t, converts them in place, then encodes with those scales.
// kFp8Block128x128 is not here: its transposed copy is the transpose of its codes
// (quantize_block128_sm90.cu).
#include <type_traits>

#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

struct ColParams {
  const void* x;          // x (R, K), contiguous
  int64_t lrows, lcols;   // x^T: K rows, R columns
  int64_t ld;             // K: x^T(r, c) = x[c * ld + r]
  uint8_t* data;          // (K, R) codes
  void* scales;
  const uint32_t* amax;   // kFp8Tensor, kNvfp4
  const float* row_scales;  // kFp8Row: the scales of x^T's rows
  QuantFormat format;
  bool rceil, pow2, swizzle;
  int block;   // scale block (16, 32, 128); for kFp8Tensor / kFp8Row the walk length
  int64_t groups;  // per row of x^T (= its scale columns)
  int64_t g0, launch_groups;  // the groups of this launch (thread indices stay below 2^31)
  FastDiv rows_div;
};

template <class In, Elem E>
__global__ void __launch_bounds__(256) quantize_columns_kernel(const ColParams p) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t gl = p.rows_div.div(t);
  const int64_t r = int64_t{t} - int64_t{gl} * p.lrows, g = p.g0 + gl;
  if (gl >= p.launch_groups) return;
  const int64_t c_begin = g * p.block, c_end = min(p.lcols, c_begin + p.block);
  const In* col = static_cast<const In*>(p.x) + r;
  float v[kChunk];
  const ElemInfo info = elem_info(E);
  const bool group_scale = p.format != QuantFormat::kFp8Tensor && p.format != QuantFormat::kFp8Row;
  uint32_t amax = 0;
  if (group_scale) {
    for (int64_t c = c_begin; c < c_end; c += kChunk) {
      load_chunk_strided(col + c * p.ld, p.ld, static_cast<int>(std::min<int64_t>(c_end - c, kChunk)), v);
      amax = max(amax, chunk_amax(v));
    }
  }
  ChunkScale cs{ChunkScale::kFp32, 0.0f, 0};
  const int64_t si = group_scale_offset(p.swizzle, p.groups, r, g);
  switch (p.format) {
    case QuantFormat::kFp8Tensor: cs.s = fp32_scale(*p.amax, info, p.pow2); break;
    case QuantFormat::kFp8Row: cs.s = p.row_scales[r]; break;
    case QuantFormat::kFp8Block1x128:
      cs.s = fp32_scale(amax, info, p.pow2);
      static_cast<float*>(p.scales)[si] = cs.s;
      break;
    case QuantFormat::kNvfp4:
      cs = {ChunkScale::kNvfp4, nvfp4_tensor_scale(*p.amax), 0};
      cs.sb = nvfp4_block_scale(amax, cs.s);
      static_cast<uint8_t*>(p.scales)[si] = cs.sb;
      break;
    default:
      cs = {ChunkScale::kMx, 0.0f, mx_scale(amax, info, p.rceil)};
      static_cast<uint8_t*>(p.scales)[si] = cs.sb;
      break;
  }
  for (int64_t c = c_begin; c < c_end; c += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(c_end - c, kChunk));
    load_chunk_strided(col + c * p.ld, p.ld, n, v);
    uint32_t w[4];
    encode_chunk<E>(v, cs, w);
    store_chunk<E>(p.data, r * p.lcols + c, n, w);
  }
}

// Column amaxes of x (R, K): blockIdx.y splits the rows; results merged with atomicMax.
template <class In>
__global__ void __launch_bounds__(256) column_amax_kernel(const In* x, int64_t R, int64_t K,
                                                          int64_t rows_per_split, uint32_t* amax) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (col >= K) return;
  const int64_t r0 = blockIdx.y * rows_per_split, r1 = min(R, r0 + rows_per_split);
  uint32_t m = 0;
  for (int64_t r = r0; r < r1; ++r) m = max(m, abs_bits(to_f32(x[r * K + col])));
  if (m != 0) atomicMax(amax + col, m);
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

}  // namespace

Status launch_transposed(const Problem& p, const Target& t, const uint32_t* amax,
                         cudaStream_t stream) {
  ColParams c{};
  c.x = t.x.data;
  c.lrows = t.x.rows;
  c.lcols = t.x.cols;
  c.ld = t.x.rows;
  c.data = t.data;
  c.scales = t.scales;
  c.amax = amax;
  c.format = p.format;
  c.rceil = p.rule == ScaleRule::kRceil;
  c.pow2 = p.pow2;
  c.swizzle = p.swizzle;
  c.block = p.traits.block == 0 ? 32 : p.traits.block;
  c.groups = (c.lcols + c.block - 1) / c.block;
  if (c.lrows == 0) return Status::Ok();

  if (p.format == QuantFormat::kFp8Row) {  // per-column amax of x, then scales, then encode
    auto* col_amax = static_cast<uint32_t*>(t.scales);
    DW_CUDA_TRY("quantize", cudaMemsetAsync(col_amax, 0, c.lrows * sizeof(float), stream));
    const int64_t R = c.lcols, K = c.lrows;
    const int64_t splits = std::min<int64_t>(std::max<int64_t>(R / 64, 1), 65535);
    const int64_t rows_per_split = (R + splits - 1) / splits;
    const dim3 grid(grid_for(K), static_cast<unsigned>(splits));
    with_input(t.x.dtype, [&](auto in) {
      using In = typename decltype(in)::type;
      column_amax_kernel<In><<<grid, 256, 0, stream>>>(static_cast<const In*>(c.x), R, K,
                                                       rows_per_split, col_amax);
    });
    finalize_row_scales<<<grid_for(K), 256, 0, stream>>>(static_cast<float*>(t.scales), K, p.elem,
                                                         p.pow2);
    DW_TRY(detail::last_launch_status("quantize"));
    c.row_scales = static_cast<const float*>(t.scales);
  }
  if (c.lcols == 0) return Status::Ok();
  if (c.lrows > kMaxLaunchThreads / 2) {
    return Status(StatusCode::kNotSupported, "quantize: transposed copies of more than 2^30 columns");
  }
  c.rows_div = FastDiv(c.lrows);
  const int64_t per_launch = (kMaxLaunchThreads - 256) / c.lrows;
  for (c.g0 = 0; c.g0 < c.groups; c.g0 += per_launch) {
    c.launch_groups = std::min(per_launch, c.groups - c.g0);
    with_input(t.x.dtype, [&](auto in) {
      using In = typename decltype(in)::type;
      const unsigned grid = grid_for(c.lrows * c.launch_groups);
      switch (p.elem) {
        case Elem::kE4M3: quantize_columns_kernel<In, Elem::kE4M3><<<grid, 256, 0, stream>>>(c); break;
        case Elem::kE5M2: quantize_columns_kernel<In, Elem::kE5M2><<<grid, 256, 0, stream>>>(c); break;
        default: quantize_columns_kernel<In, Elem::kE2M1><<<grid, 256, 0, stream>>>(c); break;
      }
    });
    DW_TRY(detail::last_launch_status("quantize"));
  }
  return Status::Ok();
}

}  // namespace deepwell::quant
