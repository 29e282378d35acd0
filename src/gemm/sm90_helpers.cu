// Small memory-bound kernels that let the few compiled GEMM instances serve every layout:
//  - a batched 2-D transpose (1-, 2- or 4-byte elements) that makes an M- or N-major operand
//    K-major in the workspace, for the layouts without a kernel instance of their own (and puts
//    fp8 block scales in the layout the block-scaled kernels read);
//  - an in-place strided add D += R, for the rare call with both 'c' and a distinct 'residual';
//  - an fp8 (optionally MX-scaled) to bf16 decode into a K-major copy, for the fp8 calls that run
//    on the bf16 kernels (MXFP8, fp32 output).
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

}  // namespace

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
