// Epilogue of the fp8 GEMM kernel (fp8_sm90_kernel.cuh): the fused operation of every deepwell
// GEMM (same formula as sm90_gemm.cuh's CUTLASS epilogue tree),
//
//   D = gamma * S + act(beta * S + alpha * sa_t * sb_t * scale_m[m] * scale_n[n] * acc
//                       + bias_n[n] + bias_m[m])
//
// applied to the fp32 accumulator registers and stored as bf16 pairs straight from registers
// (each quad of lanes writes 16 contiguous bytes of a row; rows and columns past M, N skipped).
// The stores are fire-and-forget: the math warpgroup goes on to its next tile's k-loop at once,
// whose first stages the producer has already loaded. Every operand but the accumulator is
// optional (null pointer / zero scalar); the activation is a template parameter of the store loop,
// chosen once per tile by a uniform switch, so no transcendental code sits in the plain path.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "gemm/fp8_sm90_scheduler.cuh"

namespace deepwell::matmul::sm90::fp8 {

// deepwell::Activation values (include/deepwell/gemm.hpp)
enum : int32_t { kActNone = 0, kActReLU = 1, kActGeluErf = 2, kActGeluTanh = 3, kActSiLU = 4 };

template <int32_t kAct>
__device__ __forceinline__ float activate(float x) {
  if constexpr (kAct == kActReLU) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (kAct == kActGeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else if constexpr (kAct == kActGeluTanh) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
  } else if constexpr (kAct == kActSiLU) {
    return x / (1.0f + __expf(-x));
  } else {
    return x;
  }
}

// What the epilogue reads besides the accumulator; `alpha` already holds the tensor scales.
struct EpilogueArgs {
  __nv_bfloat16* d;
  int64_t ldd, batch_d;
  const __nv_bfloat16* s;  // null: no source (beta = gamma = 0)
  int64_t lds, batch_s;
  const __nv_bfloat16* bias_n;
  const __nv_bfloat16* bias_m;
  const float* scale_m;
  const float* scale_n;
  float alpha, beta, gamma;
  int32_t m, n;
};

__device__ __forceinline__ void warpgroup_barrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// The tile's column vectors (scale_n, bias_n; 1 and 0 when absent) into the warpgroup's shared
// buffer `cols` (2 kBlockN floats), read back by store_tile. Staging them costs two warpgroup
// barriers per tile; loading them per element between the stores made row scaling 10-16 %
// slower than tensor scaling (each load after a store of unknown aliasing waits for a memory
// round trip; measured, H200), and holding them in registers spills at kBlockN = 192.
template <int kBlockN>
__device__ __forceinline__ void stage_columns(const EpilogueArgs& e, float* cols, int32_t n0,
                                              int wg_thread, int barrier_id) {
  warpgroup_barrier(barrier_id);  // the previous tile's reads are done
  for (int c = wg_thread; c < kBlockN; c += 128) {
    const int32_t col = min(n0 + c, e.n - 1);  // clamped: loads stay in bounds
    cols[c] = e.scale_n ? __ldg(e.scale_n + col) : 1.0f;
    cols[kBlockN + c] = e.bias_n ? __bfloat162float(__ldg(e.bias_n + col)) : 0.0f;
  }
  warpgroup_barrier(barrier_id);
}

// Stores warpgroup rows row0 and row0 + 8 x the tile's kBlockN columns held by this thread:
// acc[4 i + 2 h + j] is row row0 + 8 h, column n0 + 8 i + 2 (lane % 4) + j. The source is read
// through __restrict__ pointers so its loads can move ahead of the stores.
template <int kBlockN, int32_t kAct>
__device__ __forceinline__ void store_tile(const EpilogueArgs& e, const float* cols,
                                           const float (&acc)[kBlockN / 2], int32_t batch,
                                           int32_t row0, int32_t n0, int lane) {
  const int32_t t0 = 2 * (lane % 4);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int32_t row = row0 + 8 * h;
    if (row >= e.m) continue;
    const float rs = e.alpha * (e.scale_m ? __ldg(e.scale_m + row) : 1.0f);
    const float bm = e.bias_m ? __bfloat162float(__ldg(e.bias_m + row)) : 0.0f;
    __nv_bfloat16* __restrict__ drow = e.d + batch * e.batch_d + row * e.ldd;
    const __nv_bfloat16* __restrict__ srow = e.s ? e.s + batch * e.batch_s + row * e.lds : nullptr;
#pragma unroll
    for (int i = 0; i < kBlockN / 8; ++i) {
      const int32_t c = 8 * i + t0, col = n0 + c;
      if (col >= e.n) continue;
      const bool pair = col + 1 < e.n;
      float src[2] = {0.0f, 0.0f};
      if (srow) {
        if (pair) {
          const float2 s2 = __bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(srow + col)));
          src[0] = s2.x;
          src[1] = s2.y;
        } else {
          src[0] = __bfloat162float(__ldg(srow + col));
        }
      }
      float v[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float x = acc[4 * i + 2 * h + j] * rs * cols[c + j] + cols[kBlockN + c + j] + bm;
        v[j] = e.gamma * src[j] + activate<kAct>(e.beta * src[j] + x);
      }
      if (pair) {
        *reinterpret_cast<__nv_bfloat162*>(drow + col) = __floats2bfloat162_rn(v[0], v[1]);
      } else {
        drow[col] = __float2bfloat16_rn(v[0]);
      }
    }
  }
}

template <int kBlockN>
__device__ __forceinline__ void epilogue(const EpilogueArgs& e, int32_t activation, float* cols,
                                         const float (&acc)[kBlockN / 2], int32_t batch,
                                         int32_t row0, int32_t n0, int wg, int wg_thread) {
  stage_columns<kBlockN>(e, cols, n0, wg_thread, 1 + wg);
  const int lane = wg_thread % 32;
  switch (activation) {
    case kActReLU: store_tile<kBlockN, kActReLU>(e, cols, acc, batch, row0, n0, lane); break;
    case kActGeluErf: store_tile<kBlockN, kActGeluErf>(e, cols, acc, batch, row0, n0, lane); break;
    case kActGeluTanh: store_tile<kBlockN, kActGeluTanh>(e, cols, acc, batch, row0, n0, lane); break;
    case kActSiLU: store_tile<kBlockN, kActSiLU>(e, cols, acc, batch, row0, n0, lane); break;
    default: store_tile<kBlockN, kActNone>(e, cols, acc, batch, row0, n0, lane); break;
  }
}

}  // namespace deepwell::matmul::sm90::fp8
